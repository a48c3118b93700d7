#include "server/api_error.h"

#include <gtest/gtest.h>

namespace lmrun::server {
namespace {

TEST(ApiError, OpenAIShape) {
    nlohmann::json json = invalid_request("temperature must be in [0, 100], got -1", "temperature").to_json();
    ASSERT_TRUE(json.contains("error"));
    EXPECT_EQ(json["error"]["message"], "temperature must be in [0, 100], got -1");
    EXPECT_EQ(json["error"]["type"], "invalid_request_error");
    EXPECT_EQ(json["error"]["param"], "temperature");
    EXPECT_TRUE(json["error"]["code"].is_null());
    nlohmann::json no_param = invalid_request("bad").to_json();
    EXPECT_TRUE(no_param["error"]["param"].is_null());
}

TEST(ApiError, Statuses) {
    EXPECT_EQ(model_not_found("gpt-4").status, 404);
    EXPECT_EQ(model_not_found("gpt-4").code, "model_not_found");
    EXPECT_EQ(unauthorized().status, 401);
    EXPECT_EQ(too_many_requests(8).status, 429);
    EXPECT_EQ(unavailable("x").status, 503);
    EXPECT_EQ(internal_error("x").status, 500);
}

TEST(ApiError, FieldOfMessage) {
    EXPECT_EQ(field_of_message("top_p must be in (0, 1], got 2"), "top_p");
    EXPECT_EQ(field_of_message("stop[1] must not be an empty string"), "stop");
    EXPECT_EQ(field_of_message(""), "");
}

}  // namespace
}  // namespace lmrun::server
