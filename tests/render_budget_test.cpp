// Issue 10, item 12: a chat template is untrusted input. Chained filters must not overflow
// the stack; `+` on lists, string repetition, replace(), macro fan-out, loops and output
// must stop at their limits with a clear error (kind ResourceExhausted), never grow
// without bound.
#include "tokenizer/jinja/render_budget.h"

#include <gtest/gtest.h>

#include <string>

#include "tokenizer/chat_template.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"

namespace lmrun::jinja {
namespace {

Result<std::string> render_with_limits(const std::string& source, const RenderLimits& limits = {}) {
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<Template> tmpl, parse_template(source));
    Interpreter interpreter(ValueDict{}, limits);
    return interpreter.render(*tmpl);
}

// The error of rendering `source`; fails the test when it renders.
Error render_limits_error(const std::string& source, const RenderLimits& limits = {}) {
    Result<std::string> result = render_with_limits(source, limits);
    EXPECT_FALSE(result.ok()) << source.substr(0, 200);
    return result.ok() ? Error{} : result.error();
}

std::string repeated(const std::string& piece, int times) {
    std::string text;
    for (int i = 0; i < times; ++i) text += piece;
    return text;
}

TEST(RenderBudget, HundredThousandChainedFiltersAreAnErrorNotACrash) {
    const std::string source = "{{ 'x'" + repeated("|trim", 100000) + " }}";
    Error error = render_limits_error(source);
    EXPECT_EQ(error.message, "line 1, column 1002: expression nested too deeply (more than 200 levels)");
    EXPECT_EQ(error.kind, ErrorKind::ResourceExhausted);

    // The same through the public API, as a template from tokenizer_config.json.
    nlohmann::json config = {{"chat_template", source}};
    Result<ChatTemplate> chat_template =
        ChatTemplate::from_tokenizer_config(config, "m/tokenizer_config.json");
    ASSERT_FALSE(chat_template.ok());
    EXPECT_EQ(
        chat_template.error().message,
        "m/tokenizer_config.json: chat template: line 1, column 1002: expression nested too deeply (more "
        "than 200 levels)");
    EXPECT_EQ(chat_template.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_EQ(chat_template.error().subject, "m/tokenizer_config.json");
}

TEST(RenderBudget, OtherLongChainsAreBoundedToo) {
    for (const std::string& source :
         {"{{ 1" + repeated(" + 1", 100000) + " }}", "{{ x" + repeated(".a", 100000) + " }}",
          "{{ x" + repeated("[0]", 100000) + " }}",
          "{{ " + repeated("(", 100000) + "1" + repeated(")", 100000) + " }}",
          "{{ " + repeated("not ", 100000) + "1 }}"}) {
        Error error = render_limits_error(source);
        EXPECT_NE(error.message.find("nested too deeply (more than 200 levels)"), std::string::npos)
            << error.message;
        EXPECT_EQ(error.kind, ErrorKind::ResourceExhausted);
    }
}

TEST(RenderBudget, LongElifChainsRenderWithoutDeepRecursion) {
    std::string source = "{% if n == 0 %}0";
    for (int i = 1; i < 30000; ++i) source += "{% elif n == " + std::to_string(i) + " %}" + std::to_string(i);
    source += "{% endif %}";
    Result<std::unique_ptr<Template>> tmpl = parse_template("{% set n = 29999 %}" + source);
    ASSERT_TRUE(tmpl.ok()) << tmpl.error().message;
    Interpreter interpreter(ValueDict{});
    Result<std::string> out = interpreter.render(*tmpl.value());
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(out.value(), "29999");
}

TEST(RenderBudget, ListConcatenationStopsAtTheItemLimit) {
    Error error = render_limits_error(
        "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}");
    EXPECT_EQ(error.message, "line 1, column 75: the result of '+' is too large (more than 1048576 items)");
    EXPECT_EQ(error.kind, ErrorKind::ResourceExhausted);
}

TEST(RenderBudget, StringRepetitionAndReplaceAreBounded) {
    EXPECT_EQ(render_limits_error("{{ 'ab' * 100000000 }}").message,
              "line 1, column 9: repetition result is too large (more than 67108864 bytes)");
    EXPECT_EQ(render_limits_error("{% set s = 'a' * 100000 %}{{ s.replace('a', s) }}").message,
              "line 1, column 39: replace() result is too large (more than 67108864 bytes)");
    EXPECT_EQ(render_limits_error("{% set s = 'a' * 100000 %}{{ s|replace('a', s) }}").message,
              "line 1, column 31: replace() result is too large (more than 67108864 bytes)");
    // Many references to one long string: the list is cheap, its logical size is not.
    EXPECT_EQ(render_limits_error("{% set s = 'a' * 10000000 %}{{ [s] * 100 }}").message,
              "line 1, column 36: repetition result is too large (more than 67108864 bytes)");
    EXPECT_NE(render_limits_error("{% set s = 'a' * 1000000 %}{{ [s, s, s, s, s]|join(s * 20) }}")
                  .message.find("join() result is too large (more than 67108864 bytes)"),
              std::string::npos);
}

TEST(RenderBudget, MacroFanOutRunsOutOfSteps) {
    // 2^30 calls if nothing stopped it.
    const std::string source =
        "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(30) }}";
    RenderLimits limits;
    limits.max_steps = 100000;
    Error error = render_limits_error(source, limits);
    EXPECT_NE(error.message.find("the template took more than 100000 steps"), std::string::npos)
        << error.message;
    EXPECT_EQ(error.kind, ErrorKind::ResourceExhausted);
}

TEST(RenderBudget, NestedLoopsRunOutOfSteps) {
    RenderLimits limits;
    limits.max_steps = 100000;
    Error error = render_limits_error(
        "{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}", limits);
    EXPECT_NE(error.message.find("the template took more than 100000 steps"), std::string::npos)
        << error.message;
}

TEST(RenderBudget, BytesCreatedAreBounded) {
    RenderLimits limits;
    limits.max_bytes = int64_t(100) << 20;
    Error error = render_limits_error(
        "{% set s = 'x' * 10000000 %}{% for i in range(1000) %}{% set t = s ~ i %}{% endfor %}", limits);
    EXPECT_NE(error.message.find("the template created more than 104857600 bytes of values"),
              std::string::npos)
        << error.message;
    // Re-rendering one long string into captured output is copying too.
    error = render_limits_error(
        "{% set s = 'x' * 10000000 %}{% for i in range(1000) %}{% set t %}{{ s }}{% endset %}{% endfor %}",
        limits);
    EXPECT_NE(error.message.find("the template created more than 104857600 bytes of values"),
              std::string::npos)
        << error.message;
}

TEST(RenderBudget, OutputIsBounded) {
    RenderLimits limits;
    limits.max_output_bytes = size_t(1) << 20;
    Error error = render_limits_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", limits);
    EXPECT_NE(error.message.find("rendered output is too large (more than 1048576 bytes)"), std::string::npos)
        << error.message;
}

TEST(RenderBudget, EvaluationDepthIsBounded) {
    RenderLimits limits;
    limits.max_depth = 50;
    Error error =
        render_limits_error(repeated("{% if true %}", 60) + "x" + repeated("{% endif %}", 60), limits);
    EXPECT_NE(error.message.find("template nested too deeply (more than 50 levels of evaluation)"),
              std::string::npos)
        << error.message;
    // Recursion through macros counts every level it renders.
    error = render_limits_error("{% macro f(n) %}" + repeated("{% if true %}", 20) + "{{ f(n) }}" +
                                repeated("{% endif %}", 20) + "{% endmacro %}{{ f(1) }}");
    EXPECT_NE(error.message.find("nested too deeply"), std::string::npos) << error.message;
}

TEST(RenderBudget, DeepestRenderStopsAtTheDepthLimitWithinTheStack) {
    // Macro recursion through nested blocks down to a 190-level expression: the evaluation
    // nests past max_depth (500) and must stop there cleanly (under ASan too).
    const std::string body = repeated("{% if n > 0 %}", 10) + "{{ f(n - 1) }}" + repeated("{% endif %}", 10);
    const std::string deep = "0" + repeated(" + 1", 190);  // an expression tree 191 levels deep
    const std::string source = "{% macro f(n) %}{% if n == 0 %}{{ " + deep + " }}{% else %}" + body +
                               "{% endif %}{% endmacro %}{{ f(30) }}";
    Error error = render_limits_error(source);
    EXPECT_NE(error.message.find("nested too deeply"), std::string::npos) << error.message;
    EXPECT_EQ(error.kind, ErrorKind::ResourceExhausted);
    Result<std::string> shallower =
        render_with_limits("{% macro f(n) %}{% if n == 0 %}{{ " + deep + " }}{% else %}" + body +
                           "{% endif %}{% endmacro %}{{ f(20) }}");
    ASSERT_TRUE(shallower.ok()) << shallower.error().message;
    EXPECT_EQ(shallower.value(), "190");
}

TEST(RenderBudget, TemplatesLargerThanTheLimitAreRefused) {
    Result<std::unique_ptr<Template>> tmpl = parse_template(std::string(kMaxTemplateBytes + 1, 'x'));
    ASSERT_FALSE(tmpl.ok());
    EXPECT_EQ(tmpl.error().message, "template is 1048577 bytes, more than the limit of 1048576");
    EXPECT_EQ(tmpl.error().kind, ErrorKind::ResourceExhausted);
}

TEST(RenderBudget, SplittingIntoTooManyPiecesIsAnError) {
    EXPECT_EQ(render_limits_error("{{ ('a,' * 2000000).split(',')|length }}").message,
              "line 1, column 26: split() result has more than 1048576 items");
    EXPECT_EQ(render_limits_error("{% for c in 'a' * 2000000 %}{% endfor %}").message,
              "line 1, column 17: iterating over a string is too large (more than 1048576 items)");
}

TEST(RenderBudget, OperationsWithoutARenderAreLimitedOnlyPerValue) {
    EXPECT_EQ(current_budget(), nullptr);
    EXPECT_TRUE(spend_steps(int64_t(1) << 40));
    EXPECT_FALSE(budget_exhausted());
    EXPECT_FALSE(check_value_bytes(kMaxValueBytes + 1, "x").ok());
    EXPECT_TRUE(check_value_bytes(kMaxValueBytes, "x").ok());
}

}  // namespace
}  // namespace lmrun::jinja
