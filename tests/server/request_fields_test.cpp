#include "server/request_fields.h"

#include <gtest/gtest.h>

#include "server/openai_response.h"

namespace lmrun::server {
namespace {

TEST(RequestFields, IntegersAreRangeCheckedBeforeUse) {
    int64_t value = 7;
    bool given = false;
    EXPECT_FALSE(read_int(Json::parse(R"({"x": 5})"), "x", 0, 10, value, &given));
    EXPECT_EQ(value, 5);
    EXPECT_TRUE(given);
    EXPECT_FALSE(read_int(Json::parse(R"({"x": 3.0})"), "x", 0, 10, value));
    EXPECT_EQ(value, 3);
    for (const char* body : {R"({"x": 11})", R"({"x": -1})", R"({"x": 9223372036854775807})",
                             R"({"x": 18446744073709551615})", R"({"x": 1e300})", R"({"x": 2.5})",
                             R"({"x": "5"})", R"({"x": true})", R"({"x": [5]})", R"({"x": {"y": 5}})"}) {
        MaybeError error = read_int(Json::parse(body), "x", 0, 10, value);
        ASSERT_TRUE(error) << body;
        EXPECT_EQ(error->status, 400);
        EXPECT_EQ(error->param, "x");
        EXPECT_EQ(error->message.rfind("x must be an integer in [0, 10], got ", 0), 0u) << error->message;
    }
    EXPECT_EQ(value, 3);  // untouched by refused values
    EXPECT_EQ(read_int(Json::parse(R"({"x": 18446744073709551615})"), "x", 0, 10, value)->message,
              "x must be an integer in [0, 10], got 18446744073709551615");
    EXPECT_EQ(read_int(Json::parse(R"({"x": "a long string"})"), "x", 0, 10, value)->message,
              "x must be an integer in [0, 10], got a string");
    int32_t narrow = 0;
    EXPECT_TRUE(read_int(Json::parse(R"({"x": 4294967296})"), "x", 0, int64_t(1) << 40, narrow));
}

TEST(RequestFields, AbsentAndNullLeaveTheDefault) {
    int64_t value = 7;
    bool given = false;
    EXPECT_FALSE(read_int(Json::parse(R"({"x": null})"), "x", 0, 10, value, &given));
    EXPECT_FALSE(read_int(Json::parse(R"({})"), "x", 0, 10, value, &given));
    EXPECT_FALSE(read_int(Json::parse(R"([1])"), "x", 0, 10, value, &given));  // not an object: nothing there
    EXPECT_EQ(value, 7);
    EXPECT_FALSE(given);
}

TEST(RequestFields, FloatsMustFitAFloat) {
    float value = 1;
    EXPECT_FALSE(read_float(Json::parse(R"({"t": 0.5})"), "t", value));
    EXPECT_FLOAT_EQ(value, 0.5f);
    MaybeError error = read_float(Json::parse(R"({"t": 1e300})"), "t", value);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->param, "t");
    EXPECT_TRUE(read_float(Json::parse(R"({"t": "hot"})"), "t", value));
    EXPECT_FLOAT_EQ(value, 0.5f);
}

TEST(RequestFields, BoolsAndStringsAreTypeChecked) {
    bool flag = false;
    EXPECT_EQ(read_bool(Json::parse(R"({"b": "yes"})"), "b", flag)->message, "b must be a boolean");
    EXPECT_FALSE(read_bool(Json::parse(R"({"b": true})"), "b", flag));
    EXPECT_TRUE(flag);
    std::string text;
    EXPECT_EQ(read_string(Json::parse(R"({"s": 5})"), "s", text)->param, "s");
    EXPECT_FALSE(read_string(Json::parse(R"({"s": "a\u0000b"})"), "s", text));
    EXPECT_EQ(text, std::string("a\0b", 3));
}

}  // namespace
}  // namespace lmrun::server
