// Unit tests of the Jinja interpreter (src/tokenizer/jinja/).
//
// Expected strings in the table below were derived by hand from Jinja
// semantics and then checked against Python jinja2 3.1 configured like
// Hugging Face (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// loopcontrols, tojson = json.dumps(ensure_ascii=False)). Two deliberate
// differences are not in the table: tuples print like lists here, and
// {% generation %} needs HF's AssistantTracker extension in Python.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "test_util.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"
#include "tokenizer/jinja/value_format.h"

namespace lmrun::jinja {
namespace {

Result<std::string> render_source(const std::string& source,
                                  const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<Template> tmpl, parse_template(source));
    ValueDict variables;
    for (const auto& [key, value] : context.items()) {
        LMRUN_ASSIGN_OR_RETURN(Value converted, Value::from_json(value));
        variables.set(key, std::move(converted));
    }
    Interpreter interpreter(variables);
    return interpreter.render(*tmpl);
}

std::string render_ok(const std::string& source,
                      const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
    Result<std::string> result = render_source(source, context);
    EXPECT_TRUE(result.ok()) << source << "\n-> " << (result.ok() ? "" : result.error().message);
    return result.ok() ? result.value() : "<error>";
}

std::string render_error_message(const std::string& source,
                                 const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
    Result<std::string> result = render_source(source, context);
    EXPECT_FALSE(result.ok()) << source << "\n-> rendered " << (result.ok() ? result.value() : "");
    return result.ok() ? "" : result.error().message;
}

struct RenderCase {
    const char* name;
    const char* source;
    const char* context_json;
    const char* expected;
};

const RenderCase kRenderCases[] = {
    {"TrimBlocksEatsOneNewline", "{% if true %}\nA\n{% endif %}\nB", "{}", "A\nB"},
    {"TrimBlocksOnlyAfterBlocks", "{{ 1 }}\n{{ 2 }}\n", "{}", "1\n2"},
    {"LstripBlocksStripsIndentBeforeBlockTags", "  {% if true %}\n  x\n  {% endif %}\ny", "{}", "  x\ny"},
    {"LstripBlocksIgnoresVariableTags", "  {{ 1 }}\n", "{}", "  1"},
    {"LstripOnlyWhenTagStartsTheLine", "a  {% if true %}b{% endif %}", "{}", "a  b"},
    {"MinusStripsAllWhitespace", "a \n {{- 1 -}} \n b", "{}", "a1b"},
    {"MinusOnBlockTags", "x\n\n  {%- if true -%}\n\n  y  {%- endif %}", "{}", "xy"},
    {"PlusDisablesLstrip", "  {%+ if true %}x{% endif %}", "{}", "  x"},
    {"PlusDisablesTrimBlocks", "{% if true +%}\nx{% endif %}", "{}", "\nx"},
    {"CommentsAreTrimmedLikeBlocks", "a\n  {# note #}\nb{#- c -#}  c", "{}", "a\nbc"},
    {"OneTrailingNewlineDropped", "x\n\n", "{}", "x\n"},
    {"CrLfNormalized", "a\r\nb\rc", "{}", "a\nb\nc"},
    {"RawBlock", "{% raw %}{{ x }}{% if %}{% endraw %}", "{}", "{{ x }}{% if %}"},
    {"RawBlockWhitespace", "a\n  {% raw %}\n  {{ y }}\n  {% endraw %}\nb", "{}", "a\n\n  {{ y }}\nb"},
    {"GenerationBlock", "{% generation %}hi{% endgeneration %}", "{}", "hi"},
    {"LoopVariables",
     "{% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first "
     "}}{{ loop.last }}{{ loop.length }};{% endfor %}",
     "{\"xs\": [\"a\", \"b\", \"c\"]}", "0132TrueFalse3;1221FalseFalse3;2310FalseTrue3;"},
    {"LoopPrevNextItem",
     "{% for x in xs %}{{ loop.previtem is defined }}{{ loop.nextitem|default('-') }},{% endfor %}",
     "{\"xs\": [1, 2]}", "False2,True-,"},
    {"LoopCycle", "{% for x in range(4) %}{{ loop.cycle('a', 'b') }}{% endfor %}", "{}", "abab"},
    {"ForElse", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", "{}", "empty"},
    {"ForIfFilterCountsKeptItems",
     "{% for x in range(6) if x is even %}{{ x }}/{{ loop.length }} {% endfor %}", "{}", "0/3 2/3 4/3 "},
    {"ForUnpacksItems", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     "{\"d\": {\"b\": 1, \"a\": 2}}", "b=1;a=2;"},
    {"ForOverDictYieldsKeys", "{% for k in d %}{{ k }}{% endfor %}", "{\"d\": {\"x\": 1, \"y\": 2}}", "xy"},
    {"ForOverStringYieldsCodePoints", "{% for c in 'añ😀' %}[{{ c }}]{% endfor %}", "{}", "[a][ñ][😀]"},
    {"BreakAndContinue",
     "{% for x in range(10) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif "
     "%}{{ x }}{% endfor %}",
     "{}", "023"},
    {"NestedLoopsShadowLoop",
     "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}",
     "{}", "121|122|"},
    {"SetInsideLoopDoesNotLeak",
     "{% set x = 1 %}{% for i in range(3) %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}", "{}", "2221"},
    {"SetInsideIfLeaks", "{% if true %}{% set x = 5 %}{% endif %}{{ x }}", "{}", "5"},
    {"NamespaceCarriesStateOutOfLoops",
     "{% set ns = namespace(total=0, found=false) %}{% for i in range(4) %}{% set ns.total = ns.total + i "
     "%}{% if i == 2 %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.total }} {{ ns.found }}",
     "{}", "6 True"},
    {"ReverseIterationWithIndex",
     "{% for m in ms[::-1] %}{{ (ms|length - 1) - loop.index0 }}{{ m }}{% endfor %}",
     "{\"ms\": [\"a\", \"b\", \"c\"]}", "2c1b0a"},
    {"Slices",
     "{{ xs[1:] }} {{ xs[:-1] }} {{ xs[::2] }} {{ xs[::-1] }} {{ xs[-1] }} {{ xs[5:] }} {{ xs[-2:] }} {{ "
     "xs[3:0:-1] }}",
     "{\"xs\": [0, 1, 2, 3, 4]}",
     "[1, 2, 3, 4] [0, 1, 2, 3] [0, 2, 4] [4, 3, 2, 1, 0] 4 [] [3, 4] [3, 2, 1]"},
    {"StringSlicesCountCodePoints", "{{ s[1:3] }}|{{ s[-1] }}|{{ s[::-1] }}|{{ s|length }}",
     "{\"s\": \"héllo😀\"}", "él|😀|😀olléh|6"},
    {"IndexingDictsAndAttributes", "{{ d['a'] }}{{ d.a }}{{ d.b.c }}{{ xs.1 }}{{ d['zz'] }}|{{ xs[10] }}|",
     "{\"d\": {\"a\": 1, \"b\": {\"c\": 2}}, \"xs\": [5, 6]}", "1126||"},
    {"LengthFilter", "{{ xs|length }} {{ d|length }} {{ 'abc'|length }} {{ missing|length }} {{ xs|count }}",
     "{\"xs\": [1, 2], \"d\": {\"a\": 1}}", "2 1 3 0 2"},
    {"TrimFilter", "[{{ '  a b \n'|trim }}][{{ 'xxaxx'|trim('x') }}]", "{}", "[a b][a]"},
    {"CaseFilters",
     "{{ 'hello World'|upper }} {{ 'HeLLo'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ 'hello "
     "big-world'|title }} {{ 'straße'|upper }}",
     "{}", "HELLO WORLD hello Hello world Hello Big-World STRASSE"},
    {"JoinFilter", "{{ xs|join(', ') }}|{{ [1, 2, 3]|join }}|{{ us|join('/', attribute='n') }}",
     "{\"xs\": [\"a\", \"b\"], \"us\": [{\"n\": \"x\"}, {\"n\": \"y\"}]}", "a, b|123|x/y"},
    {"DefaultFilter",
     "{{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('n') }} {{ "
     "x|default(1) }}",
     "{\"x\": 0}", "d  d None 0"},
    {"FirstLastListFilters",
     "{{ xs|first }}{{ xs|last }}{{ 'abc'|first }}{{ 'ab'|list }}{{ [3,1]|reverse|list }}",
     "{\"xs\": [1, 2]}", "12a['a', 'b'][1, 3]"},
    {"NumberFilters",
     "{{ '42'|int + 1 }} {{ 3.9|int }} {{ 'x'|int(7) }} {{ '2.5'|float }} {{ 2|float }} {{ -3|abs }} {{ [1, "
     "2.5]|sum }}",
     "{}", "43 3 7 2.5 2.0 3 3.5"},
    {"ReplaceStringFilters", "{{ 'aaa'|replace('a', 'b', 2) }} {{ 5|string ~ '!' }}", "{}", "bba 5!"},
    {"MapSelectFilters",
     "{{ ms|map(attribute='role')|join(',') }} {{ ms|selectattr('role', 'equalto', 'user')|list|length }} {{ "
     "ms|rejectattr('role', 'eq', 'user')|map(attribute='role')|first }} {{ [0, 1, 2, 3]|select('odd')|list "
     "}} {{ ['a', 'B']|map('upper')|join }}",
     "{\"ms\": [{\"role\": \"system\"}, {\"role\": \"user\"}, {\"role\": \"user\"}]}",
     "system,user,user 2 system [1, 3] AB"},
    {"ItemsFilter", "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}", "{\"d\": {\"z\": 1, \"a\": 2}}",
     "z1a2"},
    {"Tests",
     "{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ d is "
     "mapping }}{{ s is mapping }}{{ i is number }}{{ i is integer }}{{ f is float }}{{ f is integer }}{{ b "
     "is boolean }}{{ b is true }}{{ b is false }}{{ 0 is false }}{{ xs is iterable }}{{ i is iterable }}",
     "{\"x\": 1, \"n\": null, \"s\": \"t\", \"d\": {}, \"i\": 3, \"f\": 1.5, \"b\": true, \"xs\": []}",
     "TrueFalseTrueTrueTrueTrueFalseTrueTrueTrueFalseTrueTrueFalseFalseTrueFalse"},
    {"TestsWithArguments",
     "{{ 4 is divisibleby 2 }}{{ 4 is divisibleby(3) }}{{ 3 is odd }}{{ 3 is even }}{{ 'a' is in 'cat' }}{{ "
     "1 is eq 1 }}{{ 1 is sameas true }}{{ none is sameas none }}{{ 'ab' is lower }}{{ range is callable }}",
     "{}", "TrueFalseTrueFalseTrueTrueFalseTrueTrueTrue"},
    {"IsNotAndNotIs", "{{ x is not none }}{{ not x is defined }}{{ m.k is not defined }}",
     "{\"x\": 1, \"m\": {}}", "TrueFalseTrue"},
    {"StringMethods",
     "{{ s.startswith('<a') }}{{ s.endswith(('x', '>')) }}{{ s.split('>')|length }}{{ ' a  b '.split() }}{{ "
     "'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}",
     "{\"s\": \"<a>b<c>\"}", "TrueTrue3['a', 'b']['a', 'b,c']['a,b', 'c']"},
    {"StripMethods",
     "[{{ '\n\nx\n'.strip('\n') }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'abcxcba'.strip('ab') "
     "}}]",
     "{}", "[x][x  ][  x][cxc]"},
    {"MoreStringMethods",
     "{{ 'a-b-c'.replace('-', '+') }} {{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') "
     "}} {{ 'Hi'.upper() }}{{ 'Hi'.lower() }} {{ 'ab cd'.title() }} {{ '-'.join(['x', 'y']) }}",
     "{}", "a+b+c 2 -1 2 HIhi Ab Cd x-y"},
    {"DictMethods",
     "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 9) }} {{ d.keys()|list }} {{ d.values()|list }} {{ "
     "d.items()|list|length }}{{ (d.items()|list)[1][0] }}",
     "{\"d\": {\"a\": 1, \"b\": \"x\"}}", "1 None 9 ['a', 'b'] [1, 'x'] 2b"},
    {"Arithmetic",
     "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 6 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 "
     "% 3 }} {{ 2 ** 10 }} {{ 1.5 + 1 }} {{ -2 - -3 }} {{ 7.5 // 2 }} {{ 10 % 2.5 }}",
     "{}", "7 9 3.5 3.0 3 -4 1 2 1024 2.5 1 3.0 0.0"},
    {"StringAndListOperators",
     "{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ none ~ true }} {{ [1] + [2] }} {{ 'ab' * 3 }} {{ [0] * 2 }}", "{}",
     "ab a1NoneTrue [1, 2] ababab [0, 0]"},
    {"Comparisons",
     "{{ 1 == 1.0 }}{{ 'a' != 'b' }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ 2 <= 2 }}{{ 'b' >= 'a' }}{{ [1, 2] == "
     "[1, 2] }}{{ d == {'a': 1} }}{{ none == none }}{{ missing == none }}",
     "{\"d\": {\"a\": 1}}", "TrueTrueTrueFalseTrueTrueTrueTrueTrueFalse"},
    {"InOperator", "{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in d }}{{ 'z' not in d }}{{ 'x' in missing }}",
     "{\"d\": {\"k\": 0}}", "TrueTrueTrueTrueFalse"},
    {"BooleanOperatorsReturnOperands",
     "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }}| {{ not 0 }} {{ not [] == [] }} {{ not true or true "
     "}}",
     "{}", "x b | True False True"},
    {"InlineIf",
     "{{ 'y' if x else 'n' }}{{ 'y' if not x else 'n' }}[{{ 'y' if false }}]{{ 1 if false else 2 if true "
     "else 3 }}",
     "{\"x\": 1}", "yn[]2"},
    {"UnaryMinusAndFilterPrecedence", "{{ -x|abs }} {{ - 2 + 5 }} {{ 1 - -1 }}", "{\"x\": 3}", "3 3 2"},
    {"OutputFormatsLikePythonStr",
     "{{ none }} {{ true }} {{ 1.0 }} {{ 0.1 }} {{ 1e-5 }} {{ 1e16 }} {{ 123456789.125 }} {{ [1, 'a', none, "
     "false, 2.5] }} {{ {'k': 'v', 'n': [1]} }} {{ \"it's\" }} {{ ['it\\'s'] }}",
     "{}",
     "None True 1.0 0.1 1e-05 1e+16 123456789.125 [1, 'a', None, False, 2.5] {'k': 'v', 'n': [1]} it's "
     "[\"it's\"]"},
    {"StringEscapes", "{{ 'a\\nb\\t|\\\\|\\'|\\\"|\\x41\\u00e9\\U0001F600|\\q' }}", "{}",
     "a\nb\t|\\|'|\"|Aé😀|\\q"},
    {"AdjacentStringsConcatenate", "{{ 'a' \"b\" 'c' }}", "{}", "abc"},
    {"UndefinedPrintsEmpty", "[{{ missing }}][{{ d.missing }}][{% for x in missing %}x{% endfor %}]",
     "{\"d\": {}}", "[][][]"},
    {"TojsonFormatting", "{{ v|tojson }}",
     "{\"v\": {\"z\": 1, \"a\": [1, 2.0, 0.5, true, false, null], \"s\": \"é\\\"\\\\\\n\\t\\u0001/<>\", "
     "\"e\": {}, \"l\": []}}",
     "{\"z\": 1, \"a\": [1, 2.0, 0.5, true, false, null], \"s\": \"é\\\"\\\\\\n\\t\\u0001/<>\", \"e\": {}, "
     "\"l\": []}"},
    {"TojsonScalarsAndIndent",
     "{{ 'x'|tojson }} {{ 3|tojson }} {{ 1e-07|tojson }} {{ none|tojson }}\n{{ {'a': [1, {'b': 2}], 'c': "
     "{}}|tojson(indent=2) }}",
     "{}", "\"x\" 3 1e-07 null\n{\n  \"a\": [\n    1,\n    {\n      \"b\": 2\n    }\n  ],\n  \"c\": {}\n}"},
    {"Macros",
     "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bo') }} {{ "
     "greet('Al', punct='?') }} {{ greet(punct='.', name='Cy') }}",
     "{}", "Hi Bo! Hi Al? Hi Cy."},
    {"SetBlockAndTupleSet",
     "{% set body %}x{{ 1 + 1 }}{% endset %}{{ body }} {% set a, b = 1, 2 %}{{ a }}{{ b }}", "{}", "x2 12"},
    {"DictAndListLiterals",
     "{% set d = {'a': 1, 'b': [1, 2], } %}{{ d.b[1] }}{{ d['a'] }} {{ (1, 2)|length }}{{ (1, 2)[1] }}{{ "
     "()|length }}{{ [] }}",
     "{}", "21 220[]"},
    {"TojsonOptions",
     "{{ {'b': 1, 'a': [1, 2]}|tojson(sort_keys=true) }}|{{ {'a': [1, 2]}|tojson(separators=(',', ':')) "
     "}}|{{ 'é😀'|tojson(ensure_ascii=true) }}|{{ [1]|tojson(indent=2, separators=(', ', ': ')) }}",
     "{}", "{\"a\": [1, 2], \"b\": 1}|{\"a\":[1,2]}|\"\\u00e9\\ud83d\\ude00\"|[\n  1\n]"},
    {"SortFilter",
     "{{ [3, 1, 2]|sort }} {{ ['b', 'B', 'a']|sort }} {{ ['b', 'B', 'a']|sort(case_sensitive=true) }} {{ [1, "
     "3, 2]|sort(reverse=true) }} {{ us|sort(attribute='n')|map(attribute='v')|join }}",
     "{\"us\": [{\"n\": 2, \"v\": \"x\"}, {\"n\": 1, \"v\": \"y\"}, {\"n\": 2, \"v\": \"z\"}]}",
     "[1, 2, 3] ['a', 'b', 'B'] ['B', 'a', 'b'] [3, 2, 1] yxz"},
    {"PythonEdgeCases",
     "{{ -0.0 }} {{ -x }} {{ ' a b '.split(none, 1) }} {{ 'ǆx'.capitalize() }} {{ 1 == true }}",
     "{\"x\": 0.0}", "-0.0 -0.0 ['a', 'b '] ǅx True"},
    {"WhitespaceControlStripsUnicodeSpaces", "a　 {{- 1 -}} \n b\n　{% if true %}x{% endif %}", "{}",
     "a1b\nx"},
    {"IndentFilter",
     "[{{ 'a\nb\n\nc\n'|indent(2) }}][{{ 'a\nb'|indent(first=true) }}][{{ 'a\n\nb'|indent(1, blank=true) "
     "}}][{{ 'x'|indent('>') }}]",
     "{}", "[a\n  b\n\n  c\n][    a\n    b][a\n \n b][x]"},
};

class JinjaRender : public ::testing::TestWithParam<RenderCase> {};

TEST_P(JinjaRender, MatchesJinja2) {
    const RenderCase& test_case = GetParam();
    const auto context = nlohmann::ordered_json::parse(test_case.context_json);
    EXPECT_EQ(render_ok(test_case.source, context), test_case.expected);
}

INSTANTIATE_TEST_SUITE_P(Jinja, JinjaRender, ::testing::ValuesIn(kRenderCases),
                         [](const ::testing::TestParamInfo<RenderCase>& info) {
                             return std::string(info.param.name);
                         });

TEST(JinjaValue, ListsAndDictsCountDepthAndEntryBytes) {
    // Scalars: depth 0, 8 bytes (a string its length); each entry adds 16 bytes and its key's.
    const Value list = Value::list({Value(1), Value("ab")});
    EXPECT_EQ(list.depth(), 1u);
    EXPECT_EQ(list.size_bytes(), (16u + 8u) + (16u + 2u));
    ValueDict entries;
    entries.set("key", list);
    entries.set("n", Value(2.5));
    const Value dict = Value::dict(std::move(entries));
    EXPECT_EQ(dict.depth(), 2u);
    EXPECT_EQ(dict.size_bytes(), (16u + 3u + 42u) + (16u + 1u + 8u));
    EXPECT_EQ(Value::list({dict, list}).depth(), 3u);
    EXPECT_EQ(Value::list({}).depth(), 1u);
    EXPECT_EQ(Value::dict({}).size_bytes(), 0u);
    // Saturating: a size past UINT64_MAX stays there.
    Value big = Value::list({Value("x")});
    for (int i = 0; i < 70; ++i) big = Value::list({big, big});
    EXPECT_EQ(big.size_bytes(), UINT64_MAX);
}

TEST(JinjaFormat, PythonFloatRepr) {
    // Values and their Python 3 repr().
    EXPECT_EQ(format_python_float(0.0), "0.0");
    EXPECT_EQ(format_python_float(-0.0), "-0.0");
    EXPECT_EQ(format_python_float(1.5), "1.5");
    EXPECT_EQ(format_python_float(100.0), "100.0");
    EXPECT_EQ(format_python_float(0.0001), "0.0001");
    EXPECT_EQ(format_python_float(0.00001), "1e-05");
    EXPECT_EQ(format_python_float(1.5e-7), "1.5e-07");
    EXPECT_EQ(format_python_float(1e15), "1000000000000000.0");
    EXPECT_EQ(format_python_float(1e16), "1e+16");
    EXPECT_EQ(format_python_float(1.2345e20), "1.2345e+20");
    EXPECT_EQ(format_python_float(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(format_python_float(-2.5e-300), "-2.5e-300");
}

TEST(JinjaFormat, TojsonKeepsKeyOrderAndUnicode) {
    const auto value =
        nlohmann::ordered_json::parse(R"({"b": {"y": [], "x": "日本"}, "a": 1.0, "c": -0.5, "d": 12})");
    Result<std::string> text = to_json_text(Value::from_json(value).value(), JsonOptions{});
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(text.value(), R"({"b": {"y": [], "x": "日本"}, "a": 1.0, "c": -0.5, "d": 12})");
    EXPECT_FALSE(to_json_text(Value(), JsonOptions{}).ok());  // undefined is not serializable
}

// Errors carry the position of the offending token (1-based line and column).
TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
    EXPECT_EQ(render_error_message("{{ 1 + }}"), "line 1, column 8: expected an expression, got '}}'");
    EXPECT_EQ(render_error_message("a\n{% if x %}\nb"),
              "line 2, column 4: unexpected end of template, expected 'endif' to close this tag");
    EXPECT_EQ(render_error_message("{% foo %}"), "line 1, column 4: unknown or unsupported tag 'foo'");
    EXPECT_EQ(render_error_message("x\n  {{ 'abc }}"), "line 2, column 6: unterminated string literal");
    EXPECT_EQ(render_error_message("{{ x ; y }}"),
              "line 1, column 6: unexpected character ';' in expression");
    EXPECT_EQ(render_error_message("{{ x"), "line 1, column 1: unclosed tag, expected '}}'");
    EXPECT_EQ(render_error_message("ab{# x"), "line 1, column 3: unclosed comment, expected '#}'");
    EXPECT_EQ(render_error_message("{% raw %}x"),
              "line 1, column 1: unclosed {% raw %} block, expected {% endraw %}");
    EXPECT_EQ(render_error_message("{% break %}"), "line 1, column 4: 'break' outside of a loop");
    EXPECT_EQ(render_error_message("{% for x in xs recursive %}{% endfor %}"),
              "line 1, column 16: recursive loops are not supported");
    EXPECT_EQ(render_error_message("{{ f(a=1, 2) }}"),
              "line 1, column 11: positional argument follows keyword argument");
    // Unknown filters and tests fail at parse time (as in Jinja), even in branches never taken.
    EXPECT_EQ(render_error_message("{% if false %}{{ x | nofilter }}{% endif %}"),
              "line 1, column 20: unknown filter 'nofilter'");
    EXPECT_EQ(render_error_message("{{ x is nothing }}"), "line 1, column 6: unknown test 'nothing'");
}

TEST(JinjaErrors, RuntimeErrorsNameLineAndColumn) {
    EXPECT_EQ(render_error_message("\n  {{ a.b.c }}", {{"a", nlohmann::ordered_json::object()}}),
              "line 2, column 9: 'dict object' has no attribute 'b'");
    EXPECT_EQ(render_error_message("{{ y.z }}"), "line 1, column 5: 'y' is undefined");
    EXPECT_EQ(render_error_message("{{ 1 / 0 }}"), "line 1, column 6: division by zero");
    EXPECT_EQ(render_error_message("{{ 'a' + 1 }}"),
              "line 1, column 8: unsupported operand type(s) for +: 'str' and 'int'");
    EXPECT_EQ(render_error_message("{% for x in 5 %}{% endfor %}"),
              "line 1, column 13: 'int' object is not iterable");
    EXPECT_EQ(render_error_message("{% set ns.x = 1 %}"),
              "line 1, column 4: cannot assign attribute on non-namespace object 'ns'");
    EXPECT_EQ(render_error_message("{{ raise_exception('Only user and assistant roles are supported!') }}"),
              "line 1, column 19: raise_exception: Only user and assistant roles are supported!");
    EXPECT_EQ(render_error_message("{{ 1 < 'a' }}"),
              "line 1, column 4: '<' not supported between instances of 'int' and 'str'");
    EXPECT_EQ(render_error_message("{{ missing() }}"), "line 1, column 11: 'missing' is undefined");
    EXPECT_EQ(render_error_message("{{ 'x'.split('') }}"), "line 1, column 13: empty separator");
    EXPECT_EQ(render_error_message("{{ [1][::0] }}"), "line 1, column 7: slice step cannot be zero");
    EXPECT_EQ(render_error_message("{{ {'a': 1}|tojson(separators='x') }}"),
              "line 1, column 12: tojson: separators must be a pair of strings");
    EXPECT_EQ(render_error_message("{{ x|tojson }}"),
              "line 1, column 5: Object of type Undefined is not JSON serializable");
}

TEST(JinjaErrors, ResourceLimitsAreErrors) {
    EXPECT_NE(render_error_message("{{ range(1000000)|length }}").find("range() is too big"),
              std::string::npos);
    EXPECT_NE(render_error_message("{{ 'x' * 100000000000 }}").find("too large"), std::string::npos);
    EXPECT_NE(
        render_error_message("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").find("nested too deeply"),
        std::string::npos);
    EXPECT_NE(render_error_message("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
    EXPECT_NE(render_error_message("{{ 99999999999999999999 }}").find("out of range"), std::string::npos);
    const std::string deep_parens = std::string(5000, '(') + "1" + std::string(5000, ')');
    EXPECT_NE(render_error_message("{{ " + deep_parens + " }}").find("nested too deeply"), std::string::npos);
    std::string deep_ifs;
    for (int i = 0; i < 1000; ++i) deep_ifs += "{% if true %}";
    EXPECT_NE(render_error_message(deep_ifs).find("nested too deeply"), std::string::npos);
    EXPECT_NE(render_error_message("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}")
                  .find("nested too deeply"),
              std::string::npos);
    EXPECT_NE(render_error_message("{{ " + std::string(3000, '-') + "1 }}").find("nested too deeply"),
              std::string::npos);
    // Values cannot be nested without bound through a namespace in a loop...
    EXPECT_NE(
        render_error_message(
            "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}")
            .find("nested too deeply"),
        std::string::npos);
    // ...nor arrive from JSON nested beyond the limit.
    nlohmann::ordered_json deep = nlohmann::ordered_json::array();
    for (int i = 0; i < 1000; ++i) deep = nlohmann::ordered_json::array({deep});
    EXPECT_FALSE(Value::from_json(deep).ok());
    // A namespace holding itself renders and is freed (LeakSanitizer checks the latter).
    EXPECT_EQ(
        render_ok("{% set ns = namespace() %}{% set ns.me = [ns] %}{% set ns.self = ns %}{{ ns.me|length }}"),
        "1");
}

TEST(JinjaErrors, MalformedTemplatesAreErrorsNotCrashes) {
    const char* const kMalformed[] = {
        "{%",
        "{{",
        "{#",
        "{% %}",
        "{{ }}",
        "{% if %}",
        "{% if x %}",
        "{% if x %}{% else %}{% else %}{% endif %}",
        "{% endif %}",
        "{% for %}",
        "{% for x %}",
        "{% for x in %}{% endfor %}",
        "{% for in xs %}{% endfor %}",
        "{% set %}",
        "{% set x %}",
        "{% set x = %}",
        "{% set = 1 %}",
        "{% macro %}",
        "{% macro m( %}{% endmacro %}",
        "{% macro m(a=1, b) %}{% endmacro %}",
        "{{ ( }}",
        "{{ ) }}",
        "{{ [1, 2 }}",
        "{{ {'a' 1} }}",
        "{{ {'a': } }}",
        "{{ x[ }}",
        "{{ x[1 }}",
        "{{ x. }}",
        "{{ x.1.2 }}",
        "{{ x | }}",
        "{{ x is }}",
        "{{ x is not }}",
        "{{ f(*a) }}",
        "{{ 'a' 'b }}",
        "{{ \"a }}",
        "{{ 1 +* 2 }}",
        "{{ not }}",
        "{{ a if }}",
        "{% if x %}{% endfor %}",
        "{% continue %}",
        "{% for x in y %}{% macro m() %}{% break %}{% endmacro %}{% endfor %}",
        "{% raw %}",
        "{% endraw %}",
        "{{ 1 is divisibleby }}",
        "{{ ns.a.b = 1 }}",
        "{% set ns.a.b = 1 %}",
        "{{ x | e(1) }}",
        "{{ @ }}",
        "{{ $x }}",
        "{{ 1e }}",
        "{% set x = 1 %}{{ x() }}",
        "{{ 1 + none }}",
        "{{ [1]|tojson(indent='x') }}",
        "{{ range('a') }}",
        "{{ range(1, 2, 0) }}",
        "{{ 'a'.startswith(1) }}",
        "{{ (1, 2) | join(1) | length(1) }}",
        "{% for a, b in [1, 2] %}{% endfor %}",
        "{% set a, b = [1] %}",
    };
    for (const char* source : kMalformed) {
        SCOPED_TRACE(source);
        Result<std::string> result = render_source(source);
        EXPECT_FALSE(result.ok()) << "rendered: " << result.value();
        if (!result.ok()) {
            EXPECT_EQ(result.error().message.rfind("line ", 0), 0u) << result.error().message;
        }
    }
}

std::string read_qwen3_template_source() {
    std::ifstream in(testing::testdata_path("qwen3-tokenizer/tokenizer_config.json"));
    EXPECT_TRUE(in.good());
    return nlohmann::json::parse(in)["chat_template"].get<std::string>();
}

// Every prefix and many random mutations of a real template either render or
// fail with an Error; none may crash (the ASan build checks memory safety too).
TEST(JinjaRobustness, TruncatedAndMutatedTemplatesNeverCrash) {
    const std::string source = read_qwen3_template_source();
    ASSERT_GT(source.size(), 1000u);
    const auto context = nlohmann::ordered_json::parse(
        R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                         {"role": "assistant", "content": "<think>r</think>a", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                         {"role": "tool", "content": "t"}],
            "tools": [{"name": "f"}], "add_generation_prompt": true})");
    EXPECT_TRUE(render_source(source, context).ok());
    size_t num_ok = 0;
    for (size_t length = 0; length <= source.size(); length += 11) {
        num_ok += render_source(source.substr(0, length), context).ok() ? 1 : 0;
    }
    EXPECT_GT(num_ok, 0u);
    std::mt19937 rng(1234);
    const std::string alphabet = "{}%#-+()[]'\".|~:,=! \nxa0";
    for (int trial = 0; trial < 400; ++trial) {
        std::string mutated = source;
        const int num_edits = 1 + static_cast<int>(rng() % 3);
        for (int edit = 0; edit < num_edits; ++edit)
            mutated[rng() % mutated.size()] = alphabet[rng() % alphabet.size()];
        (void)render_source(mutated, context);  // must return, either way
    }
}

TEST(JinjaTemplate, RenderDoesNotMutateTheTemplate) {
    // Namespaces and sets live in the render, so a second render starts afresh.
    Result<std::unique_ptr<Template>> tmpl = parse_template(
        "{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n "
        "}}");
    ASSERT_TRUE(tmpl.ok());
    for (int i = 0; i < 2; ++i) {
        Interpreter interpreter(ValueDict{});
        Result<std::string> out = interpreter.render(*tmpl.value());
        ASSERT_TRUE(out.ok());
        EXPECT_EQ(out.value(), "3");
    }
}

}  // namespace
}  // namespace lmrun::jinja
