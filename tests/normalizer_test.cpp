// Normalizers: the SentencePiece-style Prepend + Replace sequence, Unicode forms,
// and errors for unsupported types.
#include "tokenizer/normalizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace lmrun {
namespace {

using testing::from_json_text;

TEST(Normalizer, PrependAndReplace) {
    const Normalizer normalizer = from_json_text<Normalizer>(R"({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})");
    EXPECT_EQ(normalizer.normalize(" a b"),
              "\xE2\x96\x81\xE2\x96\x81"
              "a\xE2\x96\x81"
              "b");
    EXPECT_EQ(normalizer.normalize(""), "");  // Prepend leaves empty text empty
}

TEST(Normalizer, NestedSequencesRunInOrder) {
    const Normalizer normalizer = from_json_text<Normalizer>(R"({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "a"},
        {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "B"}, {"type": "Lowercase"}]},
        {"type": "Prepend", "prepend": "C"}]})");
    EXPECT_EQ(normalizer.normalize("X"), "Cbax");
    auto inner_error = Normalizer::from_json(nlohmann::json::parse(
        R"({"type": "Sequence", "normalizers": [{"type": "Sequence", "normalizers": [{"type": "NFZ"}]}]})"));
    ASSERT_FALSE(inner_error.ok());
    EXPECT_EQ(inner_error.error().message, "unsupported normalizer type 'NFZ'");
}

TEST(Normalizer, UnicodeFormsLowercaseStrip) {
    EXPECT_EQ(from_json_text<Normalizer>(R"({"type": "NFC"})").normalize("e\xCC\x81"), "\xC3\xA9");
    EXPECT_EQ(from_json_text<Normalizer>(R"({"type": "NFKD"})").normalize("\xC2\xB2"),
              "2");  // SUPERSCRIPT TWO
    EXPECT_EQ(from_json_text<Normalizer>(R"({"type": "Lowercase"})").normalize("ABC"), "abc");
    EXPECT_EQ(from_json_text<Normalizer>(R"({"type": "Strip", "strip_left": true, "strip_right": false})")
                  .normalize(" \t a "),
              "a ");
    EXPECT_EQ(from_json_text<Normalizer>(R"({"type": "Strip", "strip_left": true, "strip_right": true})")
                  .normalize("\xE3\x80\x80"
                             "a "),
              "a");
}

TEST(Normalizer, NullIsIdentity) {
    auto normalizer = Normalizer::from_json(nullptr);
    ASSERT_TRUE(normalizer.ok());
    EXPECT_TRUE(normalizer.value().empty());
    EXPECT_EQ(normalizer.value().normalize(" x "), " x ");
}

TEST(Normalizer, UnsupportedTypeIsAnError) {
    auto normalizer = Normalizer::from_json(nlohmann::json::parse(R"({"type": "Precompiled"})"));
    ASSERT_FALSE(normalizer.ok());
    EXPECT_NE(normalizer.error().message.find("Precompiled"), std::string::npos);
}

}  // namespace
}  // namespace lmrun
