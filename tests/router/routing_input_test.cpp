#include "router/routing_input.h"

#include <gtest/gtest.h>

namespace lmrun::router {
namespace {

server::HttpRequest post(std::string path, std::string body, std::string session_header = "") {
    server::HttpRequest request;
    request.method = "POST";
    request.path = std::move(path);
    request.body = std::move(body);
    if (!session_header.empty()) request.headers.emplace_back("x-session-id", session_header);
    return request;
}

TEST(RoutingInput, CompletionPromptsAsText) {
    EXPECT_EQ(read_routing_input(post("/v1/completions", R"({"prompt": "Once upon"})")).prompt_text,
              "Once upon");
    EXPECT_EQ(read_routing_input(post("/v1/completions", R"({"prompt": ["first", "second"]})")).prompt_text,
              "first");
    const RoutingInput ids = read_routing_input(post("/v1/completions", R"({"prompt": [1, 403, 407]})"));
    EXPECT_EQ(ids.prompt_text, "1,403,407,");
    EXPECT_EQ(ids.estimated_tokens, 3);
    EXPECT_EQ(read_routing_input(post("/v1/completions", R"({"prompt": [[5, 6], [7]]})")).prompt_text,
              "5,6,");
}

TEST(RoutingInput, ANextChatTurnExtendsThePreviousText) {
    const std::string turn1 = R"({"messages": [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": "Hi"}]})";
    const std::string turn2 = R"({"messages": [{"role": "system", "content": "Be brief."},
                                              {"role": "user", "content": "Hi"},
                                              {"role": "assistant", "content": "Hello."},
                                              {"role": "user", "content": [{"type": "text", "text": "More"}]}]})";
    const std::string text1 = read_routing_input(post("/v1/chat/completions", turn1)).prompt_text;
    const std::string text2 = read_routing_input(post("/v1/chat/completions", turn2)).prompt_text;
    EXPECT_EQ(text2.rfind(text1, 0), 0u);
    EXPECT_GT(text2.size(), text1.size());
    EXPECT_NE(text2.find("More"), std::string::npos);
}

TEST(RoutingInput, SessionFromTheHeaderElseTheUserField) {
    EXPECT_EQ(read_routing_input(post("/v1/completions", R"({"prompt": "a", "user": "u1"})")).session_key,
              "u1");
    EXPECT_EQ(
        read_routing_input(post("/v1/completions", R"({"prompt": "a", "user": "u1"})", "s9")).session_key,
        "s9");
    EXPECT_EQ(read_routing_input(post("/v1/completions", R"({"prompt": "a", "user": 5})")).session_key, "");
}

TEST(RoutingInput, BadBodiesGiveNothingToRouteOn) {
    for (const std::string& body :
         {std::string("not json"), std::string("[1, 2]"), std::string(300, '[') + std::string(300, ']'),
          std::string(R"({"prompt": {"text": "a"}})")}) {
        const RoutingInput input = read_routing_input(post("/v1/completions", body));
        EXPECT_EQ(input.prompt_text, "") << body.substr(0, 20);
        EXPECT_GE(input.estimated_tokens, 1);
    }
}

}  // namespace
}  // namespace lmrun::router
