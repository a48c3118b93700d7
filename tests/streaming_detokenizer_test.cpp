// StreamingDetokenizer: over every golden id sequence, the pushed pieces are valid
// UTF-8 and concatenate (with flush) to exactly decode(all ids), with and without
// a prompt prefix and with special tokens kept or skipped.
#include "tokenizer/streaming_detokenizer.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer_test_util.h"

namespace lmrun {
namespace {

using testing::qwen3_tokenizer;
using testing::read_json_file;
using testing::read_jsonl_file;
using testing::stories_tokenizer;
using testing::testdata_path;
using testing::token_ids_of;

// Streams `ids` after `prompt_ids` and returns the concatenated output; checks every piece.
std::string stream(const Tokenizer& tokenizer, std::span<const int32_t> prompt_ids,
                   std::span<const int32_t> ids, bool skip_special_tokens) {
    StreamingDetokenizer detokenizer(tokenizer, skip_special_tokens);
    if (!prompt_ids.empty()) detokenizer.set_prefix(prompt_ids);
    std::string text;
    for (int32_t id : ids) {
        const std::string piece = detokenizer.push(id);
        EXPECT_TRUE(unicode::is_valid_utf8(piece));
        text += piece;
    }
    const std::string rest = detokenizer.flush();
    EXPECT_TRUE(unicode::is_valid_utf8(rest));
    EXPECT_EQ(detokenizer.flush(), "");
    return text + rest;
}

std::vector<std::vector<int32_t>> golden_id_sequences(const std::string& relative) {
    std::vector<std::vector<int32_t>> sequences;
    for (const auto& record : read_jsonl_file(testdata_path(relative)))
        sequences.push_back(token_ids_of(record["ids"]));
    return sequences;
}

void expect_stream_equals_decode(const Tokenizer& tokenizer,
                                 const std::vector<std::vector<int32_t>>& sequences) {
    for (bool skip : {false, true}) {
        for (size_t i = 0; i < sequences.size(); ++i) {
            EXPECT_EQ(stream(tokenizer, {}, sequences[i], skip), tokenizer.decode(sequences[i], skip))
                << "sequence " << i << " skip_special_tokens=" << skip;
        }
    }
}

TEST(StreamingDetokenizer, Qwen3GoldenSequences) {
    expect_stream_equals_decode(qwen3_tokenizer(),
                                golden_id_sequences("qwen3-tokenizer/golden_public.jsonl"));
}

TEST(StreamingDetokenizer, StoriesGoldenSequences) {
    expect_stream_equals_decode(stories_tokenizer(),
                                golden_id_sequences("stories260k/tokenizer_golden.jsonl"));
}

TEST(StreamingDetokenizer, Qwen3ChatTemplateSequences) {
    std::vector<std::vector<int32_t>> sequences;
    for (const auto& c : read_json_file(testdata_path("qwen3-tokenizer/chat_template_golden.json"))) {
        sequences.push_back(token_ids_of(c["ids"]));
    }
    expect_stream_equals_decode(qwen3_tokenizer(), sequences);
}

// Random-weight model outputs cut multi-byte characters between tokens, so their
// decode contains U+FFFD: the stream must reproduce exactly the same text.
TEST(StreamingDetokenizer, TinyModelOutputsWithBrokenCharacters) {
    for (const char* model : {"qwen3-tiny/expected.json", "qwen2-tiny/expected.json"}) {
        const auto expected = read_json_file(testdata_path(model));
        for (const auto& c : expected["cases"]) {
            const auto output_ids = token_ids_of(c["output_ids"]);
            EXPECT_EQ(stream(qwen3_tokenizer(), {}, output_ids, false),
                      c["decoded_text_output_only"].get<std::string>())
                << model << " " << c["name"];
        }
    }
}

std::string text_after_prompt(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                              std::span<const int32_t> output, bool skip) {
    std::vector<int32_t> all(prompt.begin(), prompt.end());
    all.insert(all.end(), output.begin(), output.end());
    const std::string full = tokenizer.decode(all, skip);
    const std::string prompt_text = tokenizer.decode(prompt, skip);
    EXPECT_TRUE(full.starts_with(prompt_text));
    return full.substr(prompt_text.size());
}

TEST(StreamingDetokenizer, StoriesGenerationAfterPrompt) {
    const auto expected = read_json_file(testdata_path("stories260k/expected.json"));
    for (const auto& c : expected["cases"]) {
        const auto prompt_ids = token_ids_of(c["prompt_ids"]);
        const auto output_ids = token_ids_of(c["output_ids"]);
        const std::string expected = text_after_prompt(stories_tokenizer(), prompt_ids, output_ids, true);
        EXPECT_EQ(stream(stories_tokenizer(), prompt_ids, output_ids, true), expected) << c["name"];
        // The first generated word keeps its leading space after a prompt.
        const std::string full = c["decoded_text_prompt_plus_output"];
        EXPECT_EQ(c["prompt_text"].get<std::string>() + expected, full) << c["name"];
    }
}

TEST(StreamingDetokenizer, QwenGenerationAfterPrompt) {
    const auto expected = read_json_file(testdata_path("qwen3-tiny/expected.json"));
    for (const auto& c : expected["cases"]) {
        const auto prompt_ids = token_ids_of(c["prompt_ids"]);
        const auto output_ids = token_ids_of(c["output_ids"]);
        EXPECT_EQ(stream(qwen3_tokenizer(), prompt_ids, output_ids, false),
                  text_after_prompt(qwen3_tokenizer(), prompt_ids, output_ids, false))
            << c["name"];
    }
}

// Any split of a golden sequence into prompt + generated part streams the rest exactly.
TEST(StreamingDetokenizer, RandomPromptSplits) {
    std::mt19937 rng(1234);
    for (const auto* tokenizer_and_file : {&qwen3_tokenizer(), &stories_tokenizer()}) {
        const Tokenizer& tokenizer = *tokenizer_and_file;
        const auto sequences =
            golden_id_sequences(&tokenizer == &qwen3_tokenizer() ? "qwen3-tokenizer/golden_public.jsonl"
                                                                 : "stories260k/tokenizer_golden.jsonl");
        size_t num_checked = 0;
        for (size_t i = 0; i < sequences.size(); ++i) {
            const auto& ids = sequences[i];
            const size_t split = std::uniform_int_distribution<size_t>(0, ids.size())(rng);
            const std::span<const int32_t> all(ids);
            const bool skip = (i % 2) == 1;
            const std::string prompt_text = tokenizer.decode(all.first(split), skip);
            const std::string full = tokenizer.decode(all, skip);
            // A prompt ending mid-character decodes to U+FFFD that the full text replaces.
            if (!full.starts_with(prompt_text)) continue;
            EXPECT_EQ(stream(tokenizer, all.first(split), all.subspan(split), skip),
                      full.substr(prompt_text.size()))
                << "sequence " << i << " split " << split;
            ++num_checked;
        }
        EXPECT_GT(num_checked, sequences.size() * 3 / 4);
    }
}

TEST(StreamingDetokenizer, WaitsForCompleteCharacters) {
    // Byte fallback: 中 is E4 B8 AD, three <0xNN> tokens in stories260k. HF decodes a
    // run of byte tokens as a whole, so the run is held back until it ends.
    const auto ids = stories_tokenizer().encode("中", false);
    ASSERT_EQ(ids.size(), 4u);  // "▁" then three bytes
    StreamingDetokenizer detokenizer(stories_tokenizer());
    EXPECT_EQ(detokenizer.push(ids[0]), "");  // a lone leading space is stripped
    EXPECT_EQ(detokenizer.push(ids[1]), "");
    EXPECT_EQ(detokenizer.push(ids[2]), "");
    EXPECT_EQ(detokenizer.push(ids[3]), "");
    // The next non-byte token ends the run.
    const auto word_ids = stories_tokenizer().encode("a", false);
    ASSERT_EQ(stories_tokenizer().decode(word_ids), "a");
    std::vector<int32_t> all_ids = ids;
    all_ids.insert(all_ids.end(), word_ids.begin(), word_ids.end());
    std::string text = detokenizer.push(word_ids[0]);
    EXPECT_TRUE(text.starts_with("中")) << text;
    for (size_t i = 1; i < word_ids.size(); ++i) text += detokenizer.push(word_ids[i]);
    EXPECT_EQ(text + detokenizer.flush(), stories_tokenizer().decode(all_ids));

    // A valid byte ('A') followed by a stray lead byte: the whole run becomes U+FFFDs.
    const std::vector<int32_t> run = {*stories_tokenizer().token_to_id("<0x41>"),
                                      *stories_tokenizer().token_to_id("<0xE4>")};
    StreamingDetokenizer invalid_run(stories_tokenizer());
    EXPECT_EQ(invalid_run.push(run[0]), "");
    EXPECT_EQ(invalid_run.push(run[1]), "");
    EXPECT_EQ(invalid_run.flush(), stories_tokenizer().decode(run));
    EXPECT_EQ(stories_tokenizer().decode(run), "\xEF\xBF\xBD\xEF\xBF\xBD");

    // Byte level: a truncated character is flushed as U+FFFD, like decode().
    std::vector<int32_t> emoji_ids;
    for (const char* rare : {"\U0001F9A9", "\U0001FAE8", "\U0001D518", "\U00010348"}) {
        emoji_ids = qwen3_tokenizer().encode(rare);
        if (emoji_ids.size() >= 2) break;
    }
    ASSERT_GE(emoji_ids.size(), 2u);
    StreamingDetokenizer truncated(qwen3_tokenizer());
    EXPECT_EQ(truncated.push(emoji_ids[0]), "");
    EXPECT_EQ(truncated.flush(), qwen3_tokenizer().decode(std::span<const int32_t>(emoji_ids).first(1)));
    EXPECT_EQ(truncated.flush(), "");
}

// Random ids hit partial characters, stray bytes and invalid byte-fallback runs.
TEST(StreamingDetokenizer, RandomIdSequences) {
    std::mt19937 rng(7);
    for (const Tokenizer* tokenizer : {&qwen3_tokenizer(), &stories_tokenizer()}) {
        for (int iteration = 0; iteration < 400; ++iteration) {
            std::vector<int32_t> ids(1 + rng() % 40);
            for (int32_t& id : ids) id = static_cast<int32_t>(rng() % tokenizer->vocab_size());
            const bool skip = iteration % 2 == 1;
            EXPECT_EQ(stream(*tokenizer, {}, ids, skip), tokenizer->decode(ids, skip))
                << "iteration " << iteration;
        }
    }
}

TEST(StreamingDetokenizer, SkippedSpecialTokensKeepSpaces) {
    // "Hello</s> world" without the </s>: the space before "world" must survive.
    std::vector<int32_t> ids = stories_tokenizer().encode("Hello", true);
    ids.push_back(2);
    for (int32_t id : stories_tokenizer().encode(" world", false)) ids.push_back(id);
    EXPECT_EQ(stream(stories_tokenizer(), {}, ids, true), stories_tokenizer().decode(ids, true));
    EXPECT_EQ(stream(stories_tokenizer(), {}, ids, false), stories_tokenizer().decode(ids, false));
}

TEST(StreamingDetokenizer, LongSequenceIsLinear) {
    // ~60k ids: a detokenizer that re-decoded everything per push would take minutes.
    std::string text;
    for (const auto& record : read_jsonl_file(testdata_path("qwen3-tokenizer/golden_public.jsonl"))) {
        text += record["text"].get<std::string>();
    }
    std::string long_text;
    for (int i = 0; i < 6; ++i) long_text += text;
    const auto ids = qwen3_tokenizer().encode(long_text);
    ASSERT_GT(ids.size(), 20000u);
    EXPECT_EQ(stream(qwen3_tokenizer(), {}, ids, false), qwen3_tokenizer().decode(ids, false));
}

}  // namespace
}  // namespace lmrun
