#include "core/json_io.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
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

TEST(JsonIo, OrderedKeepsDocumentOrderAndLastValueOfARepeatedKey) {
    auto json =
        parse_ordered_json(R"({"z": 1, "a": {"y": [true, null, "s\u0000t"], "b": 2.5}, "z": 3})", "body");
    ASSERT_TRUE(json.ok()) << json.error().message;
    EXPECT_EQ(json->dump(), R"({"z":3,"a":{"y":[true,null,"s\u0000t"],"b":2.5}})");
    EXPECT_EQ((*json)["a"]["y"][2].get<std::string>(), std::string("s\0t", 3));
    auto scalar = parse_ordered_json("18446744073709551615", "body");
    ASSERT_TRUE(scalar.ok());
    EXPECT_EQ(scalar->get<uint64_t>(), 18446744073709551615ull);
}

TEST(JsonIo, OrderedRefusesDeepMalformedAndLargeText) {
    const int depth = 200000;
    std::string deep(depth, '[');
    deep.append(depth, ']');
    auto too_deep = parse_ordered_json(deep, "request body");
    ASSERT_FALSE(too_deep.ok());
    EXPECT_EQ(too_deep.error().kind, ErrorKind::ResourceExhausted);
    EXPECT_EQ(too_deep.error().message, "request body: JSON nested deeper than 256 levels");
    JsonLimits limits;
    limits.max_depth = 2;
    EXPECT_TRUE(parse_ordered_json(R"({"a": [1]})", "t", limits).ok());
    EXPECT_FALSE(parse_ordered_json(R"({"a": [[1]]})", "t", limits).ok());
    auto malformed = parse_ordered_json(R"({"a": 1} x)", "request body");
    ASSERT_FALSE(malformed.ok());
    EXPECT_EQ(malformed.error().kind, ErrorKind::Corrupt);
    limits.max_bytes = 4;
    auto large = parse_ordered_json("[1,2,3]", "t", limits);
    ASSERT_FALSE(large.ok());
    EXPECT_EQ(large.error().kind, ErrorKind::ResourceExhausted);
}

// An object with many keys costs one hash lookup per key: no key is compared with the keys
// before it (a search of the object per insert, as ordered_map::emplace does, would make
// n * (n - 1) / 2 comparisons here). Only a repeated key is compared, once.
TEST(JsonIo, OrderedObjectKeysAreNotComparedWithEachOther) {
    const int num_keys = 80000;
    std::string text = "{";
    for (int i = 0; i < num_keys; ++i) text += fmt::format("{}\"k{}\": {}", i ? "," : "", i, i);
    text += "}";
    JsonParseStats stats;
    auto json = parse_ordered_json(text, "body", {}, &stats);
    ASSERT_TRUE(json.ok()) << json.error().message;
    ASSERT_EQ(json->size(), size_t(num_keys));
    EXPECT_EQ(json->begin().key(), "k0");
    EXPECT_EQ(stats.key_comparisons, 0u);

    std::string repeated = "{";
    for (int i = 0; i < 2 * num_keys; ++i)
        repeated += fmt::format("{}\"k{}\": {}", i ? "," : "", i % num_keys, i);
    repeated += "}";
    JsonParseStats repeated_stats;
    auto twice = parse_ordered_json(repeated, "body", {}, &repeated_stats);
    ASSERT_TRUE(twice.ok());
    EXPECT_EQ(twice->size(), size_t(num_keys));
    EXPECT_EQ((*twice)["k0"], num_keys);
    EXPECT_EQ(repeated_stats.key_comparisons, size_t(num_keys));
}

}  // namespace
}  // namespace lmrun
