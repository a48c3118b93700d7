// Fuzzes the Jinja parser and interpreter: the input is a template, parsed and, when it
// parses, rendered with a chat-like context under small render limits (so each input
// runs fast; the limits' own checks are what is being fuzzed). Errors are fine; crashes,
// hangs, leaks and unbounded memory are not.
#include <memory>
#include <string_view>

#include "fuzz_util.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"

namespace {

lmrun::jinja::ValueDict chat_context() {
    const auto messages = nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Hi <think>x</think> there"},
        {"role": "assistant", "content": "Hello!", "tool_calls": [{"type": "function",
            "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
        {"role": "tool", "content": "{\"ok\": 1}"},
        {"role": "user", "content": [{"type": "text", "text": "part"}]}])");
    lmrun::jinja::ValueDict context;
    context.set("messages", lmrun::jinja::Value::from_json(messages).value());
    context.set("add_generation_prompt", lmrun::jinja::Value(true));
    context.set("bos_token", lmrun::jinja::Value("<s>"));
    context.set("eos_token", lmrun::jinja::Value("</s>"));
    context.set("tools", lmrun::jinja::Value::none());
    context.set("enable_thinking", lmrun::jinja::Value(false));
    return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lmrun::jinja;
    static const ValueDict context = chat_context();
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    auto tmpl = parse_template(source);
    if (!tmpl.ok()) return 0;
    RenderLimits limits;
    limits.max_steps = 200000;
    limits.max_bytes = int64_t(64) << 20;
    limits.max_output_bytes = size_t(1) << 20;
    Interpreter interpreter(context, limits);
    auto rendered = interpreter.render(*tmpl.value());
    if (rendered.ok())
        lmrun::fuzz::require(rendered->size() <= limits.max_output_bytes, "output within its limit");
    return 0;
}
