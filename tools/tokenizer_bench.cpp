// Measures tokenizer load time and encode/decode throughput.
// Usage: tokenizer_bench <tokenizer.json> [text-file] [repeats]
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/timer.h"
#include "tokenizer/streaming_detokenizer.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s <tokenizer.json> [text-file] [repeats]\n", argv[0]);
        return 2;
    }
    lmrun::Stopwatch load_watch;
    auto loaded = lmrun::Tokenizer::from_file(argv[1]);
    if (!loaded.ok()) {
        std::fprintf(stderr, "%s\n", loaded.error().message.c_str());
        return 1;
    }
    std::printf("load: %.1f ms, vocab_size %d\n", load_watch.elapsed_seconds() * 1e3,
                loaded.value()->vocab_size());
    const lmrun::Tokenizer& tokenizer = *loaded.value();

    std::string text =
        "The quick brown fox jumps over the lazy dog. 你好，世界！ def f(x):\n    return x + 1\n";
    if (argc >= 3) {
        std::ifstream in(argv[2], std::ios::binary);
        std::stringstream buffer;
        buffer << in.rdbuf();
        text = buffer.str();
    }
    const int repeats = argc >= 4 ? std::atoi(argv[3]) : 200;
    std::string long_text;
    for (int i = 0; i < repeats; ++i) long_text += text;

    lmrun::Stopwatch encode_watch;
    const auto ids = tokenizer.encode(long_text, false);
    const double encode_s = encode_watch.elapsed_seconds();
    std::printf("encode: %zu bytes -> %zu ids in %.1f ms (%.0f ids/ms, %.1f MB/s)\n", long_text.size(),
                ids.size(), encode_s * 1e3, ids.size() / (encode_s * 1e3), long_text.size() / encode_s / 1e6);

    lmrun::Stopwatch decode_watch;
    const std::string decoded = tokenizer.decode(ids);
    std::printf("decode: %.1f ms, roundtrip %s\n", decode_watch.elapsed_seconds() * 1e3,
                decoded == long_text ? "exact" : "differs (normalization)");

    lmrun::Stopwatch stream_watch;
    lmrun::StreamingDetokenizer detokenizer(tokenizer);
    std::string streamed;
    for (int32_t id : ids) streamed += detokenizer.push(id);
    streamed += detokenizer.flush();
    const double stream_s = stream_watch.elapsed_seconds();
    std::printf("stream: %.2f us/id, equals decode: %s\n", stream_s * 1e6 / ids.size(),
                streamed == decoded ? "yes" : "NO");
    return streamed == decoded ? 0 : 1;
}
