#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "test_util.h"

namespace lmrun {
namespace {

// Python dicts keep insertion order and `tojson` prints keys in that order, so
// the goldens are read as ordered_json (nlohmann::json would sort the keys).
nlohmann::ordered_json read_ordered_json(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    return nlohmann::ordered_json::parse(in);
}

ChatTemplate load_qwen3_template() {
    const nlohmann::ordered_json config =
        read_ordered_json(testing::testdata_path("qwen3-tokenizer/tokenizer_config.json"));
    Result<ChatTemplate> parsed = ChatTemplate::from_tokenizer_config(config, "qwen3 tokenizer_config.json");
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
    return parsed.ok() ? std::move(parsed).value() : ChatTemplate::parse("").value();
}

ChatTemplateOptions options_from_kwargs(const nlohmann::ordered_json& kwargs) {
    ChatTemplateOptions options;
    for (const auto& [key, value] : kwargs.items()) {
        if (key == "add_generation_prompt") {
            options.add_generation_prompt = value.get<bool>();
        } else {
            options.extra_kwargs[key] = value;
        }
    }
    return options;
}

// All 14 cases rendered by Python jinja2 3.1.2 with HF's settings (and
// @huggingface/jinja): the prompt must match byte for byte.
TEST(ChatTemplate, Qwen3GoldensMatchByteForByte) {
    const ChatTemplate chat_template = load_qwen3_template();
    const nlohmann::ordered_json cases =
        read_ordered_json(testing::testdata_path("qwen3-tokenizer/chat_template_golden.json"));
    ASSERT_EQ(cases.size(), 14u);
    for (const auto& test_case : cases) {
        SCOPED_TRACE(test_case["name"].get<std::string>());
        const ChatTemplateOptions options = options_from_kwargs(test_case["kwargs"]);
        Result<std::string> rendered = chat_template.apply(test_case["messages"], options);
        ASSERT_TRUE(rendered.ok()) << rendered.error().message;
        EXPECT_EQ(rendered.value(), test_case["rendered"].get<std::string>());
    }
}

TEST(ChatTemplate, RenderingFromManyThreadsGivesTheSameResult) {
    const ChatTemplate chat_template = load_qwen3_template();
    const nlohmann::ordered_json cases =
        read_ordered_json(testing::testdata_path("qwen3-tokenizer/chat_template_golden.json"));
    std::vector<std::string> failures(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < failures.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int repeat = 0; repeat < 5; ++repeat) {
                for (const auto& test_case : cases) {
                    auto rendered =
                        chat_template.apply(test_case["messages"], options_from_kwargs(test_case["kwargs"]));
                    if (!rendered.ok() || rendered.value() != test_case["rendered"].get<std::string>())
                        failures[t] = test_case["name"].get<std::string>();
                }
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::string& failure : failures) EXPECT_EQ(failure, "");
}

TEST(ChatTemplate, AcceptsPlainJsonMessages) {
    // nlohmann::json (sorted keys) is fine when no object is printed with tojson.
    const ChatTemplate chat_template = load_qwen3_template();
    const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}});
    ChatTemplateOptions options;
    options.extra_kwargs = nlohmann::json{{"enable_thinking", false}};
    Result<std::string> rendered = chat_template.apply(messages, options);
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(),
              "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, ReadsNamedTemplateListAndRejectsBadConfigs) {
    const nlohmann::json config = {
        {"chat_template", nlohmann::json::array({{{"name", "tool_use"}, {"template", "T"}},
                                                 {{"name", "default"}, {"template", "D{{ bos_token }}"}}})}};
    Result<ChatTemplate> parsed = ChatTemplate::from_tokenizer_config(config, "cfg.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    Result<std::string> rendered = parsed->apply(nlohmann::json::array(), ChatTemplateOptions{}, "<s>");
    ASSERT_TRUE(rendered.ok());
    EXPECT_EQ(rendered.value(), "D<s>");

    const Result<ChatTemplate> missing =
        ChatTemplate::from_tokenizer_config(nlohmann::json::object(), "cfg.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("cfg.json"), std::string::npos);
    const Result<ChatTemplate> no_default = ChatTemplate::from_tokenizer_config(
        nlohmann::json{{"chat_template", nlohmann::json::array({{{"name", "x"}, {"template", "T"}}})}},
        "cfg.json");
    EXPECT_FALSE(no_default.ok());
    const Result<ChatTemplate> not_string =
        ChatTemplate::from_tokenizer_config(nlohmann::json{{"chat_template", 3}}, "cfg.json");
    EXPECT_FALSE(not_string.ok());
    const Result<ChatTemplate> syntax =
        ChatTemplate::from_tokenizer_config(nlohmann::json{{"chat_template", "{% if %}"}}, "cfg.json");
    ASSERT_FALSE(syntax.ok());
    EXPECT_NE(syntax.error().message.find("line 1, column"), std::string::npos) << syntax.error().message;
}

// Meta's Llama-3 Instruct template (single line, as shipped). Expected output
// derived by hand: each message becomes
// <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT|trim<|eot_id|>, the
// first one prefixed with bos_token; `|trim` binds tighter than `+`, so only
// the content is trimmed ("  Hello!  \n" -> "Hello!"); the generation prompt
// opens an assistant header. (Python jinja2 3.1 renders the same string.)
TEST(ChatTemplate, Llama3StyleTemplate) {
    const std::string source =
        "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
        "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
        "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ "
        "content }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' "
        "}}"
        "{% endif %}";
    Result<ChatTemplate> chat_template = ChatTemplate::parse(source);
    ASSERT_TRUE(chat_template.ok()) << chat_template.error().message;
    const auto messages = nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "  Hello!  \n"},
        {"role": "assistant", "content": "Arr, hi."},
        {"role": "user", "content": "Bye?"}])");
    Result<std::string> rendered =
        chat_template->apply(messages, ChatTemplateOptions{}, "<|begin_of_text|>", "<|eot_id|>");
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(),
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a pirate.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nArr, hi.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nBye?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

// A multi-line Llama-3.1-style template that relies on `{%-`/`{{-` to drop all
// indentation and newlines between tags. Hand derivation: every tag strips the
// whitespace before it, so only the string literals reach the output; the
// system message is trimmed and removed from `messages`; `date_string` falls
// back to "26 Jul 2024" when not passed; `tools` is None unless given, and an
// empty tools list still adds "Environment: ipython\n". (Checked with jinja2.)
TEST(ChatTemplate, Llama31StyleMultiLineTemplate) {
    const std::string source = R"J({{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}

{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)J";
    Result<ChatTemplate> chat_template = ChatTemplate::parse(source);
    ASSERT_TRUE(chat_template.ok()) << chat_template.error().message;
    const auto messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "You are a pirate.  "}, {"role": "user", "content": "Hello"}])");
    Result<std::string> rendered = chat_template->apply(messages, ChatTemplateOptions{}, "<|begin_of_text|>");
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(),
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
              "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a pirate.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");

    ChatTemplateOptions options;
    options.add_generation_prompt = false;
    options.extra_kwargs =
        nlohmann::ordered_json{{"tools", nlohmann::ordered_json::array()}, {"date_string", "1 Jan 2025"}};
    rendered =
        chat_template->apply(nlohmann::ordered_json::array({messages[1]}), options, "<|begin_of_text|>");
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(
        rendered.value(),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 1 Jan 2025\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>");
}

// The classic Hugging Face Llama-2 chat template. Hand derivation: a leading
// system message is folded into the first user turn as
// "<<SYS>>\n...\n<</SYS>>\n\n" + content, and content.strip() applies to that
// whole string, so the user's leading space (" Hi ") survives after the
// "\n\n" while the trailing one goes; user turns are "<s>[INST] ... [/INST]",
// assistant turns " ... </s>". Roles that do not alternate hit raise_exception.
TEST(ChatTemplate, Llama2StyleTemplate) {
    const std::string source =
        "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message "
        "= "
        "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false "
        "%}"
        "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 "
        "== 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% "
        "endif %}"
        "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message "
        "+ "
        "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif "
        "%}"
        "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif "
        "%}{% endfor %}";
    Result<ChatTemplate> chat_template = ChatTemplate::parse(source);
    ASSERT_TRUE(chat_template.ok()) << chat_template.error().message;
    const auto messages = nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": " Hi "},
        {"role": "assistant", "content": "Hello! "},
        {"role": "user", "content": "Bye"}])");
    ChatTemplateOptions options;
    options.add_generation_prompt = false;
    Result<std::string> rendered = chat_template->apply(messages, options, "<s>", "</s>");
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(),
              "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Bye [/INST]");

    const nlohmann::ordered_json without_system(messages.begin() + 1, messages.end());
    rendered = chat_template->apply(without_system, options, "<s>", "</s>");
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(), "<s>[INST] Hi [/INST] Hello! </s><s>[INST] Bye [/INST]");

    const auto not_alternating = nlohmann::ordered_json::parse(
        R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])");
    rendered = chat_template->apply(not_alternating, options, "<s>", "</s>");
    ASSERT_FALSE(rendered.ok());
    EXPECT_NE(
        rendered.error().message.find("Conversation roles must alternate user/assistant/user/assistant/..."),
        std::string::npos)
        << rendered.error().message;
}

TEST(ChatTemplate, RejectsNonListMessagesAndUnparsedTemplates) {
    const Result<ChatTemplate> parsed = ChatTemplate::parse("{{ messages }}");
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->source(), "{{ messages }}");
    EXPECT_FALSE(parsed->apply(nlohmann::json::object(), ChatTemplateOptions{}).ok());
    const ChatTemplate empty;
    EXPECT_FALSE(empty.apply(nlohmann::json::array(), ChatTemplateOptions{}).ok());
}

TEST(ChatTemplate, ContextHasToolsNoneAndExtraKwargs) {
    // As in transformers: tools/documents are None (defined) unless passed,
    // extra kwargs become variables, and template errors are prefixed.
    const Result<ChatTemplate> parsed = ChatTemplate::parse(
        "{{ tools is none }}{{ documents is defined }}{{ add_generation_prompt }}{{ custom }}{{ eos_token "
        "}}");
    ASSERT_TRUE(parsed.ok());
    ChatTemplateOptions options;
    options.add_generation_prompt = false;
    options.extra_kwargs = nlohmann::ordered_json{{"custom", 7}};
    Result<std::string> rendered = parsed->apply(nlohmann::json::array(), options, "<s>", "</s>");
    ASSERT_TRUE(rendered.ok()) << rendered.error().message;
    EXPECT_EQ(rendered.value(), "TrueTrueFalse7</s>");

    const Result<ChatTemplate> raising = ChatTemplate::parse("{{ raise_exception('no system role') }}");
    ASSERT_TRUE(raising.ok());
    rendered = raising->apply(nlohmann::json::array(), ChatTemplateOptions{});
    ASSERT_FALSE(rendered.ok());
    EXPECT_EQ(rendered.error().message, "chat template: line 1, column 19: raise_exception: no system role");
}

// One loader for LLM, lmrun chat and lmrun serve: a file wins over the tokenizer's template,
// no file and no template is "none", and a missing file is NotFound (not "none").
TEST(LoadChatTemplate, FileThenTokenizerConfigThenNone) {
    const std::string dir = testing::make_temp_dir("load_chat_template");
    const std::string file = dir + "/template.jinja";
    std::ofstream(file) << "from file: {{ messages[0]['content'] }}";
    const nlohmann::json config = {{"chat_template", "from config: {{ messages[0]['content'] }}"}};
    const nlohmann::json messages = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});

    auto from_file = load_chat_template(file, &config);
    ASSERT_TRUE(from_file.ok() && from_file.value()) << (from_file.ok() ? "" : from_file.error().message);
    EXPECT_EQ(from_file.value()->apply(messages, {}).value(), "from file: hi");

    auto from_config = load_chat_template("", &config);
    ASSERT_TRUE(from_config.ok() && from_config.value());
    EXPECT_EQ(from_config.value()->apply(messages, {}).value(), "from config: hi");

    const nlohmann::json no_template = nlohmann::json::object();
    auto none = load_chat_template("", &no_template);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none.value().has_value());
    auto no_tokenizer = load_chat_template("", nullptr);
    ASSERT_TRUE(no_tokenizer.ok());
    EXPECT_FALSE(no_tokenizer.value().has_value());

    auto missing = load_chat_template(dir + "/absent.jinja", &config);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().kind, ErrorKind::NotFound);
    EXPECT_NE(missing.error().message.find("absent.jinja"), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace lmrun
