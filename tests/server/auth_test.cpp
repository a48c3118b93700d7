#include "server/auth.h"

#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

TEST(Auth, ConstantTimeEqualsIsEquality) {
    EXPECT_TRUE(constant_time_equals("sekret", "sekret"));
    EXPECT_TRUE(constant_time_equals("", ""));
    EXPECT_FALSE(constant_time_equals("Sekret", "sekret"));   // first byte
    EXPECT_FALSE(constant_time_equals("sekreT", "sekret"));   // last byte
    EXPECT_FALSE(constant_time_equals("sekre", "sekret"));    // a prefix
    EXPECT_FALSE(constant_time_equals("sekret!", "sekret"));  // longer
    EXPECT_FALSE(constant_time_equals("", "sekret"));
    EXPECT_FALSE(constant_time_equals("x", ""));
    EXPECT_FALSE(constant_time_equals(std::string("sek\0et", 6), "sekret"));
}

TEST(Auth, WhichPathsNeedTheKey) {
    AuthPolicy none;
    EXPECT_FALSE(needs_api_key(none, "/v1/completions"));
    AuthPolicy keyed{"k", false};
    for (const char* path :
         {"/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize", "/detokenize"})
        EXPECT_TRUE(needs_api_key(keyed, path)) << path;
    for (const char* path : {"/health", "/metrics"}) EXPECT_FALSE(needs_api_key(keyed, path)) << path;
    AuthPolicy open_tokenize{"k", true};
    EXPECT_FALSE(needs_api_key(open_tokenize, "/tokenize"));
    EXPECT_FALSE(needs_api_key(open_tokenize, "/detokenize"));
    EXPECT_TRUE(needs_api_key(open_tokenize, "/v1/completions"));
}

TEST(Auth, BearerHeader) {
    AuthPolicy keyed{"sekret", false};
    EXPECT_TRUE(authorized(keyed, "/v1/models", "Bearer sekret"));
    EXPECT_FALSE(authorized(keyed, "/v1/models", "Bearer wrong!"));
    EXPECT_FALSE(authorized(keyed, "/v1/models", "sekret"));
    EXPECT_FALSE(authorized(keyed, "/v1/models", ""));
    EXPECT_FALSE(authorized(keyed, "/tokenize", "Bearer sekre"));
    EXPECT_TRUE(authorized(keyed, "/health", ""));
}

}  // namespace
}  // namespace lmrun::server
