// Fuzzes tokenizers two ways, chosen by the first byte of the input:
//   even: the rest is text, encoded and decoded with a real tokenizer (Qwen3's byte-level
//         BPE or stories260k's SentencePiece-style BPE from ../shared/testdata), and the
//         rest read as token ids is decoded too;
//   odd:  the rest is a tokenizer.json, loaded through the whole Tokenizer::from_text path
//         (bounded SAX reader, BPE tables, added tokens, normalizers, pre-tokenizers,
//         decoders); an accepted one encodes and decodes a sample and the input itself.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {

using lmrun::Tokenizer;

const Tokenizer* load(const char* relative) {
    auto tokenizer = Tokenizer::from_file(lmrun::fuzz::testdata_path(relative));
    lmrun::fuzz::require(tokenizer.ok(), "the test data tokenizers load");
    return tokenizer.value().release();
}

void exercise(const Tokenizer& tokenizer, std::string_view text) {
    const std::vector<int32_t> ids = tokenizer.encode(text, true);
    for (int32_t id : ids)
        lmrun::fuzz::require(id >= 0 && id < tokenizer.vocab_size(), "ids within the vocab");
    (void)tokenizer.decode(ids, false);
    (void)tokenizer.decode(ids, true);
    (void)tokenizer.encode(text, false);
}

void decode_raw_ids(const Tokenizer& tokenizer, const uint8_t* data, size_t size) {
    std::vector<int32_t> ids(size / 4);
    if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
    (void)tokenizer.decode(ids, false);
    (void)tokenizer.decode_chunk(ids, true, false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const Tokenizer* qwen3 = load("qwen3-tokenizer/tokenizer.json");
    static const Tokenizer* stories = load("stories260k/tokenizer.json");
    const uint8_t mode = data[0];
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    if (mode % 2 == 0) {
        const Tokenizer& tokenizer = mode % 4 == 0 ? *qwen3 : *stories;
        exercise(tokenizer, rest);
        decode_raw_ids(tokenizer, data + 1, size - 1);
        return 0;
    }
    auto loaded = Tokenizer::from_text(rest, nlohmann::json::object(), "tokenizer.json");
    if (!loaded.ok()) {
        lmrun::fuzz::require(loaded.error().message.rfind("tokenizer.json: ", 0) == 0,
                             "errors name the file");
        return 0;
    }
    exercise(*loaded.value(), "Hello world! <s> 12345 héllo\n\t  x");
    exercise(*loaded.value(), rest.substr(0, 256));
    decode_raw_ids(*loaded.value(), data + 1, std::min<size_t>(size - 1, 256));
    return 0;
}
