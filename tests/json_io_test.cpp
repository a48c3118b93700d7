#include "core/json_io.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace lmrun {
namespace {

TEST(JsonIo, ParsesAnObject) {
    auto json = parse_json(R"({"a": [1, 2, {"b": null}]})", "test");
    ASSERT_TRUE(json.ok()) << json.error().message;
    EXPECT_EQ((*json)["a"][2].contains("b"), true);
}

TEST(JsonIo, DeepNestingIsRefusedWithoutRecursion) {
    const int depth = 200000;
    std::string text(depth, '[');
    text.append(depth, ']');
    auto json = parse_json(text, "request body");
    ASSERT_FALSE(json.ok());
    EXPECT_EQ(json.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_EQ(json.error().subject, "request body");
    EXPECT_NE(json.error().message.find("nested deeper than 256"), std::string::npos) << json.error().message;
}

TEST(JsonIo, DepthAtTheLimitIsAccepted) {
    JsonLimits limits;
    limits.max_depth = 8;
    EXPECT_TRUE(parse_json("[[[[[[[[1]]]]]]]]", "t", limits).ok());
    EXPECT_FALSE(parse_json("[[[[[[[[[1]]]]]]]]]", "t", limits).ok());
    EXPECT_TRUE(parse_json(R"({"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":1}}}}}}}})", "t", limits).ok());
    EXPECT_FALSE(parse_json(R"({"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}})", "t", limits).ok());
}

TEST(JsonIo, MalformedIsCorruptAndNamesTheSource) {
    auto json = parse_json("{\"a\": ", "config.json");
    ASSERT_FALSE(json.ok());
    EXPECT_EQ(json.error().kind, ErrorKind::Corrupt);
    EXPECT_NE(json.error().message.find("config.json: malformed JSON"), std::string::npos)
        << json.error().message;
}

TEST(JsonIo, SizeLimit) {
    JsonLimits limits;
    limits.max_bytes = 10;
    auto json = parse_json("[1,2,3,4,5,6]", "body", limits);
    ASSERT_FALSE(json.ok());
    EXPECT_EQ(json.error().kind, ErrorKind::ResourceExhausted);
}

TEST(JsonIo, FileErrorsNameThePath) {
    auto missing = read_json_file("/nonexistent/config.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().kind, ErrorKind::NotFound);
    EXPECT_EQ(missing.error().subject, "/nonexistent/config.json");

    const std::string path = (std::filesystem::temp_directory_path() / "lmrun_json_io_test.json").string();
    std::ofstream(path) << R"({"x": 1})";
    auto json = read_json_file(path);
    ASSERT_TRUE(json.ok()) << json.error().message;
    EXPECT_EQ((*json)["x"], 1);
    JsonLimits small;
    small.max_bytes = 4;
    auto too_big = read_json_file(path, small);
    ASSERT_FALSE(too_big.ok());
    EXPECT_EQ(too_big.error().kind, ErrorKind::ResourceExhausted);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lmrun
