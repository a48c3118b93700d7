// Decoders: HF decode_chain semantics of each supported step.
#include "tokenizer/decoder.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace lmrun {
namespace {

const std::string kReplacementCharUtf8 = "\xEF\xBF\xBD";
const std::string kLlamaDecoder = R"({"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";

using testing::from_json_text;

TEST(Decoder, LlamaSequence) {
    const Decoder decoder = from_json_text<Decoder>(kLlamaDecoder);
    EXPECT_EQ(decoder.decode({"\xE2\x96\x81Hello", "\xE2\x96\x81world"}), "Hello world");
    EXPECT_EQ(decoder.decode({"<s>", "\xE2\x96\x81Hi"}), "<s> Hi");
    // Only one leading space is stripped, and only at the start of the sequence.
    EXPECT_EQ(decoder.decode({"\xE2\x96\x81", "\xE2\x96\x81x"}), " x");
    EXPECT_EQ(decoder.decode({"\xE2\x96\x81x"}, /*at_sequence_start=*/false), " x");
}

TEST(Decoder, ByteFallbackRuns) {
    const Decoder decoder = from_json_text<Decoder>(kLlamaDecoder);
    EXPECT_EQ(decoder.decode({"<0xE4>", "<0xB8>", "<0xAD>", "a"}),
              "\xE4\xB8\xAD"
              "a");
    // A run that is not valid UTF-8 gives one U+FFFD per byte (not per subpart).
    EXPECT_EQ(decoder.decode({"<0xE4>", "<0xB8>", "a"}), kReplacementCharUtf8 + kReplacementCharUtf8 + "a");
    EXPECT_EQ(decoder.decode({"<0x41>", "<0xZZ>", "<0x4>"}), "A<0xZZ><0x4>");
}

TEST(Decoder, ByteLevel) {
    const Decoder decoder = from_json_text<Decoder>(R"({"type": "ByteLevel", "add_prefix_space": false})");
    // U+0120 'Ġ' is the space byte; a token with a char outside the byte alphabet is kept as UTF-8.
    EXPECT_EQ(decoder.decode({"\xC4\xA0hello", "<|im_end|>", "\xE4\xB8\xAD"}),
              " hello<|im_end|>\xE4\xB8\xAD");
    // U+00E9 'é' stands for the single byte E9, which alone is not UTF-8.
    EXPECT_EQ(decoder.decode({"\xC3\xA9"}), kReplacementCharUtf8);
    // 'ä'+'¸'+'Ń' are the bytes E4 B8 AD: 中.
    EXPECT_EQ(decoder.decode({"\xC3\xA4\xC2\xB8", "\xC5\x83"}), "\xE4\xB8\xAD");
}

TEST(Decoder, MetaspaceAndReplaceRegex) {
    const Decoder metaspace = from_json_text<Decoder>(
        R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"})");
    EXPECT_EQ(metaspace.decode({"\xE2\x96\x81Hey", "\xE2\x96\x81there"}), "Hey there");
    // HF drops every replacement char of the first token, not just a leading one.
    EXPECT_EQ(metaspace.decode({"a\xE2\x96\x81"
                                "b",
                                "\xE2\x96\x81"
                                "c"}),
              "ab c");
    EXPECT_EQ(metaspace.decode({"\xE2\x96\x81Hey"}, /*at_sequence_start=*/false), " Hey");
    const Decoder replace =
        from_json_text<Decoder>(R"({"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"})");
    EXPECT_EQ(replace.decode({"a12b3", "4"}), "a#b##");
}

TEST(Decoder, NoDecoderJoinsWithSpaces) {
    EXPECT_EQ(from_json_text<Decoder>("").decode({"a", "b", "c"}), "a b c");
}

TEST(Decoder, UnsupportedTypeIsAnError) {
    auto decoder = Decoder::from_json(nlohmann::json::parse(R"({"type": "CTC"})"));
    ASSERT_FALSE(decoder.ok());
    EXPECT_NE(decoder.error().message.find("CTC"), std::string::npos);
}

}  // namespace
}  // namespace lmrun
