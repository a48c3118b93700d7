// Renders a conversation with the chat template of a tokenizer_config.json,
// to debug prompts by hand:
//   render_chat_template tokenizer_config.json messages.json [kwargs.json]
// kwargs.json holds e.g. {"add_generation_prompt": true, "enable_thinking": false,
// "tools": [...], "bos_token": "<s>", "eos_token": "</s>"}. Prints the prompt.
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tokenizer/chat_template.h"

namespace {

lmrun::Result<nlohmann::ordered_json> read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) return lmrun::make_error("{}: cannot open", path);
    nlohmann::ordered_json json = nlohmann::ordered_json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return lmrun::make_error("{}: invalid JSON", path);
    return json;
}

lmrun::Result<std::string> run(int argc, char** argv) {
    if (argc < 3 || argc > 4)
        return lmrun::make_error("usage: {} tokenizer_config.json messages.json [kwargs.json]", argv[0]);
    LMRUN_ASSIGN_OR_RETURN(nlohmann::ordered_json config, read_json(argv[1]));
    LMRUN_ASSIGN_OR_RETURN(nlohmann::ordered_json messages, read_json(argv[2]));
    nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
    if (argc == 4) {
        LMRUN_ASSIGN_OR_RETURN(kwargs, read_json(argv[3]));
    }
    LMRUN_ASSIGN_OR_RETURN(lmrun::ChatTemplate chat_template,
                           lmrun::ChatTemplate::from_tokenizer_config(config, argv[1]));
    lmrun::ChatTemplateOptions options;
    std::string bos_token;
    std::string eos_token;
    for (const auto& [key, value] : kwargs.items()) {
        if (key == "add_generation_prompt" && value.is_boolean()) {
            options.add_generation_prompt = value.get<bool>();
        } else if ((key == "bos_token" || key == "eos_token") && value.is_string()) {
            (key == "bos_token" ? bos_token : eos_token) = value.get<std::string>();
        } else {
            options.extra_kwargs[key] = value;
        }
    }
    return chat_template.apply(messages, options, bos_token, eos_token);
}

}  // namespace

int main(int argc, char** argv) {
    lmrun::Result<std::string> prompt = run(argc, argv);
    if (!prompt.ok()) {
        std::fprintf(stderr, "%s\n", prompt.error().message.c_str());
        return 1;
    }
    std::fwrite(prompt.value().data(), 1, prompt.value().size(), stdout);
    return 0;
}
