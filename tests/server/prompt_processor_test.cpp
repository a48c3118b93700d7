#include "server/prompt_processor.h"

#include <gtest/gtest.h>

#include "server_test_util.h"
#include "test_util.h"

namespace lmrun::server {
namespace {

class PromptProcessorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        auto tokenizer = Tokenizer::from_dir(lmrun::testing::testdata_path("stories260k"));
        ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().message;
        tokenizer_ = std::move(tokenizer).value();
    }

    PromptProcessor make(std::optional<ChatTemplate> chat_template = std::nullopt) const {
        return PromptProcessor(tokenizer_.get(), std::move(chat_template),
                               ModelInfo{"stories", "dir", 512, 512, 0, "", "", false});
    }

    std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(PromptProcessorTest, EncodesTextLikeTheGoldens) {
    PromptProcessor prompts = make();
    for (const testing::StoriesGolden& golden : testing::stories_goldens()) {
        std::vector<int32_t> ids;
        ASSERT_FALSE(prompts.encode_prompt(PromptInput{golden.prompt_text, {}, false}, true, ids));
        EXPECT_EQ(ids, golden.prompt_ids) << golden.name;
    }
    std::vector<int32_t> ids;
    ASSERT_FALSE(prompts.encode_prompt(PromptInput{{}, {1, 2, 3}, true}, true, ids));
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 3}));
}

// Text that cannot fit the context whatever it tokenizes to is refused before tokenizing: this
// tokenizer takes seconds for a few megabytes.
TEST_F(PromptProcessorTest, TextTooLongForAnyTokenizationIsRefusedUntokenized) {
    PromptProcessor prompts = make();
    size_t longest = 0;
    for (int32_t id = 0; id < tokenizer_->vocab_size(); ++id)
        longest = std::max(longest, tokenizer_->id_to_token(id).size());
    EXPECT_EQ(prompts.max_text_bytes(), 512 * longest * 8);
    std::vector<int32_t> ids;
    const std::string at_limit(prompts.max_text_bytes(), 'a');
    EXPECT_FALSE(prompts.encode_prompt(PromptInput{at_limit, {}, false}, true, ids));
    EXPECT_GT(ids.size(), 512u);  // the context check comes next (fit_to_context)
    ids.clear();
    auto error = prompts.encode_prompt(PromptInput{at_limit + "a", {}, false}, true, ids);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "prompt");
    EXPECT_NE(error->message.find("maximum context length is 512 tokens"), std::string::npos)
        << error->message;
    EXPECT_TRUE(ids.empty());
}

TEST_F(PromptProcessorTest, FitsToTheContext) {
    PromptProcessor prompts = make();
    SamplingParams params;
    params.max_tokens = std::numeric_limits<int32_t>::max();
    ASSERT_FALSE(prompts.fit_to_context(std::vector<int32_t>(12, 5), false, "messages", params));
    EXPECT_EQ(params.max_tokens, 500);  // the rest of the context

    SamplingParams small;
    small.max_tokens = 16;
    ASSERT_FALSE(prompts.fit_to_context(std::vector<int32_t>(500, 5), false, "prompt", small));
    EXPECT_EQ(small.max_tokens, 12);  // a default limit shrinks to fit

    auto too_long = prompts.fit_to_context(std::vector<int32_t>(512, 5), false, "prompt", small);
    ASSERT_TRUE(too_long);
    EXPECT_EQ(too_long->param, "prompt");
    EXPECT_NE(too_long->message.find("512"), std::string::npos);
    // The engine's boundary (prompt_check.h): one token less leaves room for exactly one.
    SamplingParams one_left;
    ASSERT_FALSE(prompts.fit_to_context(std::vector<int32_t>(511, 5), false, "prompt", one_left));
    EXPECT_EQ(one_left.max_tokens, 1);

    SamplingParams asked;
    asked.max_tokens = 100;
    auto over = prompts.fit_to_context(std::vector<int32_t>(500, 5), true, "prompt", asked);
    ASSERT_TRUE(over);
    EXPECT_EQ(over->param, "max_tokens");

    auto vocab = prompts.fit_to_context({1, 512}, false, "prompt", asked);
    ASSERT_TRUE(vocab);
    EXPECT_EQ(vocab->param, "prompt");
    auto empty = prompts.fit_to_context({}, false, "prompt", asked);
    ASSERT_TRUE(empty);

    // The largest max_tokens a request may carry does not overflow the context check.
    SamplingParams largest;
    largest.max_tokens = std::numeric_limits<int32_t>::max();
    auto huge = prompts.fit_to_context(std::vector<int32_t>(5, 5), true, "prompt", largest);
    ASSERT_TRUE(huge);
    EXPECT_EQ(huge->param, "max_tokens");
    EXPECT_NE(
        huge->message.find("you requested 2147483652 tokens (5 in the input, 2147483647 for the completion)"),
        std::string::npos)
        << huge->message;

    SamplingParams min_tokens;
    min_tokens.max_tokens = 16;
    min_tokens.min_tokens = 16;
    auto shrunk_below_min = prompts.fit_to_context(std::vector<int32_t>(500, 5), false, "prompt", min_tokens);
    ASSERT_TRUE(shrunk_below_min);
    EXPECT_EQ(shrunk_below_min->param, "min_tokens");
}

TEST_F(PromptProcessorTest, ChatNeedsATemplate) {
    PromptProcessor without = make();
    std::string text;
    nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
    auto error = without.render_chat(messages, ChatTemplateOptions{}, text);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "messages");

    auto chat_template = ChatTemplate::parse(
        "{{ bos_token }}{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
        "{% if add_generation_prompt %}>{% endif %}");
    ASSERT_TRUE(chat_template.ok()) << chat_template.error().message;
    PromptProcessor with = make(std::move(chat_template).value());
    ASSERT_FALSE(with.render_chat(messages, ChatTemplateOptions{}, text));
    EXPECT_EQ(text, "<s>[Hi]>");
    ChatTemplateOptions no_prompt;
    no_prompt.add_generation_prompt = false;
    ASSERT_FALSE(with.render_chat(messages, no_prompt, text));
    EXPECT_EQ(text, "<s>[Hi]");
    // Bytes after a NUL in a message reach the prompt (issue 10, item 9).
    nlohmann::ordered_json with_nul =
        nlohmann::ordered_json::parse(R"([{"role": "user", "content": "a\u0000b"}])");
    ASSERT_FALSE(with.render_chat(with_nul, no_prompt, text));
    EXPECT_EQ(text, std::string("<s>[a\0b]", 8));
}

TEST_F(PromptProcessorTest, TokenTexts) {
    PromptProcessor prompts = make();
    // Each golden's text is its tokens' texts one after another.
    const testing::StoriesGolden golden = testing::stories_goldens()[2];
    std::string joined;
    for (int32_t id : golden.output_ids) joined += prompts.token_text(id);
    EXPECT_EQ(joined, golden.output_text);
    PromptProcessor no_tokenizer(nullptr, std::nullopt, ModelInfo{"m", "d", 512, 512, 0, "", "", false});
    EXPECT_EQ(no_tokenizer.token_text(5), "token_id:5");
    std::vector<int32_t> ids;
    EXPECT_TRUE(no_tokenizer.encode_prompt(PromptInput{"text", {}, false}, true, ids));
}

}  // namespace
}  // namespace lmrun::server
