// Fuzzes the OpenAI request bodies as the server reads them: parse_ordered_json (bounded,
// linear, key order kept), then parse_completion_request and
// parse_chat_request into SamplingParams. Whatever they accept must pass
// SamplingParams::validate() (nothing invalid may reach the engine), and an accepted chat
// request is rendered with the real Qwen3 chat template, with the request's own kwargs.
#include <string_view>

#include "core/json_io.h"
#include "fuzz_util.h"
#include "server/openai_request.h"
#include "tokenizer/chat_template.h"

namespace {

const lmrun::ChatTemplate& qwen3_template() {
    static const lmrun::ChatTemplate chat_template = [] {
        const std::string path = lmrun::fuzz::testdata_path("qwen3-tokenizer/tokenizer_config.json");
        auto config = lmrun::read_json_file(path);
        lmrun::fuzz::require(config.ok(), "the Qwen3 tokenizer_config.json loads");
        auto parsed = lmrun::ChatTemplate::from_tokenizer_config(config.value(), path);
        lmrun::fuzz::require(parsed.ok(), "the Qwen3 chat template parses");
        return parsed.value();
    }();
    return chat_template;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lmrun;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    Result<nlohmann::ordered_json> parsed =
        parse_ordered_json(text, "request body", JsonLimits{256, size_t(1) << 20});
    if (!parsed.ok()) return 0;
    const nlohmann::ordered_json& body = parsed.value();

    server::CompletionRequest completion;
    if (!server::parse_completion_request(body, completion))
        fuzz::require(completion.params.validate().ok(), "accepted completion params are valid");

    server::ChatRequest chat;
    if (server::parse_chat_request(body, chat)) return 0;
    fuzz::require(chat.params.validate().ok(), "accepted chat params are valid");
    ChatTemplateOptions options = chat.template_options;
    options.limits.max_steps = 200000;
    options.limits.max_output_bytes = size_t(1) << 20;
    (void)qwen3_template().apply(chat.messages, options, "", "<|im_end|>");
    return 0;
}
