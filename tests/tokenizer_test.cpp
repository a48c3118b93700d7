// Golden tests for tokenizer.json tokenizers: every record of the public golden
// files (ids from HF's Rust tokenizers), chat-template renderings, model prompts,
// and load errors.
#include "tokenizer/tokenizer.h"

#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer_test_util.h"

namespace lmrun {
namespace {

using testing::qwen3_tokenizer;
using testing::read_json_file;
using testing::read_jsonl_file;
using testing::stories_tokenizer;
using testing::testdata_path;
using testing::token_ids_of;

TEST(TokenizerQwen3, GoldenPublicEncodeAndDecode) {
    const auto records = read_jsonl_file(testdata_path("qwen3-tokenizer/golden_public.jsonl"));
    ASSERT_EQ(records.size(), 218u);
    for (const auto& record : records) {
        const std::string text = record["text"];
        const auto expected_ids = token_ids_of(record["ids"]);
        EXPECT_EQ(qwen3_tokenizer().encode(text), expected_ids) << record["id"];
        EXPECT_EQ(qwen3_tokenizer().encode(text, /*add_special_tokens=*/false), expected_ids) << record["id"];
        EXPECT_EQ(qwen3_tokenizer().decode(expected_ids), record["decoded"].get<std::string>())
            << record["id"];
    }
}

TEST(TokenizerQwen3, GoldenTokensMatchIdToToken) {
    const auto records = read_jsonl_file(testdata_path("qwen3-tokenizer/golden_public.jsonl"));
    for (const auto& record : records) {
        const auto ids = token_ids_of(record["ids"]);
        const auto tokens = record["tokens"].get<std::vector<std::string>>();
        ASSERT_EQ(ids.size(), tokens.size()) << record["id"];
        for (size_t i = 0; i < ids.size(); ++i) {
            EXPECT_EQ(qwen3_tokenizer().id_to_token(ids[i]), tokens[i]) << record["id"];
            EXPECT_EQ(qwen3_tokenizer().token_to_id(tokens[i]), ids[i]) << record["id"];
        }
    }
}

TEST(TokenizerQwen3, ChatTemplateRenderings) {
    const auto cases = read_json_file(testdata_path("qwen3-tokenizer/chat_template_golden.json"));
    ASSERT_EQ(cases.size(), 14u);
    for (const auto& c : cases) {
        EXPECT_EQ(qwen3_tokenizer().encode(c["rendered"].get<std::string>()), token_ids_of(c["ids"]))
            << c["name"];
    }
}

TEST(TokenizerQwen3, TinyModelPromptsAndOutputs) {
    for (const char* model : {"qwen3-tiny/expected.json", "qwen2-tiny/expected.json"}) {
        const auto expected = read_json_file(testdata_path(model));
        for (const auto& c : expected["cases"]) {
            EXPECT_EQ(qwen3_tokenizer().encode(c["prompt_text"].get<std::string>(), false),
                      token_ids_of(c["prompt_ids"]))
                << model << " " << c["name"];
            EXPECT_EQ(qwen3_tokenizer().decode(token_ids_of(c["output_ids"])),
                      c["decoded_text_output_only"].get<std::string>())
                << model << " " << c["name"];
        }
    }
}

TEST(TokenizerQwen3, SpecialTokensAndVocab) {
    EXPECT_EQ(qwen3_tokenizer().vocab_size(), 151669);
    EXPECT_EQ(qwen3_tokenizer().eos_token_id(), 151645);
    EXPECT_EQ(qwen3_tokenizer().pad_token_id(), 151643);
    EXPECT_FALSE(qwen3_tokenizer().bos_token_id().has_value());
    EXPECT_EQ(qwen3_tokenizer().token_to_id("<|im_start|>"), 151644);
    EXPECT_TRUE(qwen3_tokenizer().is_special(151644));
    EXPECT_FALSE(qwen3_tokenizer().is_special(151657));  // <tool_call> is added but not special
    EXPECT_FALSE(qwen3_tokenizer().is_special(9707));
    const std::vector<int32_t> ids = {151644, 9707, 151645, 151657};
    EXPECT_EQ(qwen3_tokenizer().decode(ids, /*skip_special_tokens=*/true), "Hello<tool_call>");
    EXPECT_EQ(qwen3_tokenizer().decode(ids, false), "<|im_start|>Hello<|im_end|><tool_call>");
    EXPECT_TRUE(qwen3_tokenizer().tokenizer_config().contains("chat_template"));
}

TEST(TokenizerQwen3, ConcurrentEncodesMatchGoldens) {
    const auto records = read_jsonl_file(testdata_path("qwen3-tokenizer/golden_public.jsonl"));
    std::vector<int> num_mismatches(2, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
            for (size_t i = t; i < records.size() * 2; i += 2) {
                const auto& record = records[i % records.size()];
                if (qwen3_tokenizer().encode(record["text"].get<std::string>()) !=
                    token_ids_of(record["ids"]))
                    ++num_mismatches[t];
            }
        });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(num_mismatches, (std::vector<int>{0, 0}));
}

TEST(TokenizerQwen3, InvalidUtf8InputIsRepaired) {
    EXPECT_EQ(qwen3_tokenizer().encode("a\xFF"
                                       "b"),
              qwen3_tokenizer().encode("a\xEF\xBF\xBD"
                                       "b"));
}

TEST(TokenizerStories, GoldenEncodeAndDecode) {
    const auto records = read_jsonl_file(testdata_path("stories260k/tokenizer_golden.jsonl"));
    ASSERT_EQ(records.size(), 218u);
    for (const auto& record : records) {
        const std::string text = record["text"];
        const auto expected_ids = token_ids_of(record["ids"]);
        EXPECT_EQ(stories_tokenizer().encode(text, true), expected_ids) << record["id"];
        EXPECT_EQ(stories_tokenizer().decode(expected_ids, /*skip_special_tokens=*/true),
                  record["decoded"].get<std::string>())
            << record["id"];
        const auto tokens = record["tokens"].get<std::vector<std::string>>();
        ASSERT_EQ(tokens.size(), expected_ids.size());
        for (size_t i = 0; i < tokens.size(); ++i)
            EXPECT_EQ(stories_tokenizer().id_to_token(expected_ids[i]), tokens[i]);
    }
}

TEST(TokenizerStories, ModelPromptsAndOutputs) {
    const auto expected = read_json_file(testdata_path("stories260k/expected.json"));
    for (const auto& c : expected["cases"]) {
        const auto prompt_ids = token_ids_of(c["prompt_ids"]);
        EXPECT_EQ(stories_tokenizer().encode(c["prompt_text"].get<std::string>(), true), prompt_ids)
            << c["name"];
        EXPECT_EQ(stories_tokenizer().decode(token_ids_of(c["output_ids"]), true),
                  c["decoded_text_output_only"].get<std::string>())
            << c["name"];
        std::vector<int32_t> all_ids = prompt_ids;
        for (int32_t id : token_ids_of(c["output_ids"])) all_ids.push_back(id);
        EXPECT_EQ(stories_tokenizer().decode(all_ids, true),
                  c["decoded_text_prompt_plus_output"].get<std::string>())
            << c["name"];
    }
}

TEST(TokenizerStories, SpecialTokens) {
    EXPECT_EQ(stories_tokenizer().vocab_size(), 512);
    EXPECT_EQ(stories_tokenizer().bos_token_id(), 1);
    EXPECT_EQ(stories_tokenizer().eos_token_id(), 2);
    EXPECT_EQ(stories_tokenizer().encode("", true), std::vector<int32_t>{1});
    EXPECT_EQ(stories_tokenizer().encode("", false), std::vector<int32_t>{});
    const auto with_bos = stories_tokenizer().encode("Hello", true);
    const auto without_bos = stories_tokenizer().encode("Hello", false);
    ASSERT_EQ(with_bos.size(), without_bos.size() + 1);
    EXPECT_EQ(with_bos[0], 1);
    // Special tokens are kept as text unless skipped.
    EXPECT_EQ(stories_tokenizer().decode(with_bos, false), "<s> Hello");
    EXPECT_EQ(stories_tokenizer().decode(with_bos, true), "Hello");
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& contents) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << contents;
    return path;
}

TEST(TokenizerErrors, MissingFileNamesThePath) {
    auto result = Tokenizer::from_file("/nonexistent/dir/tokenizer.json");
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("/nonexistent/dir/tokenizer.json"), std::string::npos);
}

TEST(TokenizerErrors, MalformedJsonNamesThePath) {
    const std::string dir = testing::make_temp_dir("tokenizer_malformed");
    const std::string path = write_file(dir, "tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
    auto result = Tokenizer::from_file(path);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find(path), std::string::npos) << result.error().message;
    EXPECT_NE(result.error().message.find("malformed JSON"), std::string::npos) << result.error().message;
}

TEST(TokenizerErrors, UnsupportedComponentsNameTheFileAndType) {
    const std::string dir = testing::make_temp_dir("tokenizer_unsupported");
    const std::string model =
        R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"model": {"type": "Unigram", "vocab": []}})", "Unigram"},
        {"{" + model + R"(, "normalizer": {"type": "BertNormalizer"}})", "BertNormalizer"},
        {"{" + model + R"(, "pre_tokenizer": {"type": "Whitespace"}})", "Whitespace"},
        {"{" + model + R"(, "decoder": {"type": "WordPiece"}})", "WordPiece"},
        {"{" + model + R"(, "post_processor": {"type": "Mystery"}})", "Mystery"},
        {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})", "merges[0]"},
        {R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})", "model.vocab"},
        {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "fuse_unk": "yes"}})",
         "invalid tokenizer definition"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::string path = write_file(dir, "case" + std::to_string(i) + ".json", cases[i].first);
        auto result = Tokenizer::from_file(path);
        ASSERT_FALSE(result.ok()) << cases[i].first;
        EXPECT_NE(result.error().message.find(path), std::string::npos) << result.error().message;
        EXPECT_NE(result.error().message.find(cases[i].second), std::string::npos) << result.error().message;
    }
}

TEST(TokenizerErrors, OddlyShapedFilesAreErrors) {
    const std::string dir = testing::make_temp_dir("tokenizer_odd");
    const std::vector<std::string> contents = {
        "",
        "[1, 2]",
        R"({"a": [{"b": 1}], "c": [[{"d": {}}]]})",
        R"({"model": [{"vocab": {}}]})",
        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}})",
        R"({"model": {"type": "BPE", "vocab": {"a": [0, [1]]}, "merges": []}})",
        R"({"model": {"type": "BPE", "vocab": {"a": {"b": [2]}}, "merges": []}})",
        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", ["a"]], {"x": 1}, null, 2.5]}})",
    };
    for (size_t i = 0; i < contents.size(); ++i) {
        const std::string path = write_file(dir, "odd" + std::to_string(i) + ".json", contents[i]);
        auto result = Tokenizer::from_file(path);
        ASSERT_FALSE(result.ok()) << contents[i];
        EXPECT_NE(result.error().message.find(path), std::string::npos) << result.error().message;
    }
}

TEST(TokenizerErrors, MalformedConfigNamesTheConfigFile) {
    const std::string dir = testing::make_temp_dir("tokenizer_bad_config");
    write_file(dir, "tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
    write_file(dir, "tokenizer_config.json", "not json");
    auto result = Tokenizer::from_dir(dir);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("tokenizer_config.json"), std::string::npos)
        << result.error().message;
}

// Issue 10, item 11: a tokenizer.json nested 200,000 levels deep crashed the loader (SIGSEGV).
TEST(TokenizerErrors, DeeplyNestedFileIsAnErrorNotACrash) {
    const std::string dir = testing::make_temp_dir("tokenizer_deep");
    for (const std::string& section : {std::string("normalizer"), std::string("model")}) {
        const std::string path =
            write_file(dir, "deep_" + section + ".json",
                       "{\"" + section + "\": " + std::string(200000, '[') + std::string(200000, ']') + "}");
        auto result = Tokenizer::from_file(path);
        ASSERT_FALSE(result.ok());
        EXPECT_EQ(result.error().message, path + ": JSON nested deeper than 64 levels");
        EXPECT_EQ(result.error().kind, ErrorKind::ResourceExhausted);
        EXPECT_EQ(result.error().subject, path);
    }
}

TEST(TokenizerErrors, MergeNamingAMissingTokenIsCorrupt) {
    const std::string dir = testing::make_temp_dir("tokenizer_bad_merge");
    const std::string path = write_file(dir, "tokenizer.json",
                                        R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},)"
                                        R"( "merges": ["a b", "a zz"]}})");
    auto result = Tokenizer::from_file(path);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().message,
              path + ": model.merges[1]: 'a' + 'zz' uses a token missing from the vocab");
    EXPECT_EQ(result.error().kind, ErrorKind::Corrupt);
    EXPECT_EQ(result.error().subject, path);
}

TEST(TokenizerErrors, AddedTokenIdOutOfRangeIsCorrupt) {
    const std::string dir = testing::make_temp_dir("tokenizer_added_id");
    const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
    for (const std::string id : {"4294967296", "-1", "2147483647", "5000000"}) {
        const std::string path =
            write_file(dir, "tokenizer_" + id + ".json",
                       "{" + model + R"(, "added_tokens": [{"id": )" + id + R"(, "content": "<x>"}]})");
        auto result = Tokenizer::from_file(path);
        ASSERT_FALSE(result.ok()) << id;
        EXPECT_EQ(result.error().message,
                  path + ": added token \"<x>\" has id " + id + ", out of range [0, 4194304)");
        EXPECT_EQ(result.error().kind, ErrorKind::Corrupt);
    }
    const std::string vocab_path = write_file(
        dir, "vocab_id.json", R"({"model": {"type": "BPE", "vocab": {"a": 2147483647}, "merges": []}})");
    auto vocab = Tokenizer::from_file(vocab_path);
    ASSERT_FALSE(vocab.ok());
    EXPECT_NE(vocab.error().message.find("model.vocab: id 2147483647 of 'a' is out of range [0, 4194304)"),
              std::string::npos)
        << vocab.error().message;
}

TEST(TokenizerErrors, EachComponentsErrorNamesTheFileAndKeepsUnsupported) {
    const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
    for (const std::string section : {"normalizer", "pre_tokenizer", "post_processor", "decoder"}) {
        const std::string unsupported = "{" + model + ", \"" + section + "\": {\"type\": \"NoSuch\"}}";
        auto result = Tokenizer::from_text(unsupported, nlohmann::json::object(), "m/tokenizer.json");
        ASSERT_FALSE(result.ok()) << section;
        EXPECT_EQ(result.error().message, "m/tokenizer.json: unsupported " + section + " type 'NoSuch'");
        EXPECT_EQ(result.error().kind, ErrorKind::Unsupported) << section;
        EXPECT_EQ(result.error().subject, "m/tokenizer.json");
        const std::string untyped = "{" + model + ", \"" + section + "\": {}}";
        auto corrupt = Tokenizer::from_text(untyped, nlohmann::json::object(), "m/tokenizer.json");
        ASSERT_FALSE(corrupt.ok()) << section;
        EXPECT_EQ(corrupt.error().message, "m/tokenizer.json: " + section + " without a type");
        EXPECT_EQ(corrupt.error().kind, ErrorKind::Corrupt) << section;
    }
    // The special tokens come last: a BOS missing from the vocabulary is the file's fault too.
    auto bos =
        Tokenizer::from_text("{" + model + "}", nlohmann::json{{"bos_token", "<s>"}}, "m/tokenizer.json");
    ASSERT_FALSE(bos.ok());
    EXPECT_EQ(bos.error().message,
              "m/tokenizer.json: tokenizer_config bos_token '<s>' is not in the vocabulary");
    EXPECT_EQ(bos.error().kind, ErrorKind::Corrupt);
}

}  // namespace
}  // namespace lmrun
