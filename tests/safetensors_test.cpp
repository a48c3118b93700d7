#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "model/safetensors_writer.h"
#include "test_util.h"

namespace lmrun {
namespace {

using testing::make_temp_dir;
using testing::testdata_path;

// Writes a safetensors file by hand: 8-byte size (or `size_override`), header, `data_bytes` of data.
void write_raw(const std::string& path, const std::string& header, size_t data_bytes,
               std::optional<uint64_t> size_override = std::nullopt) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    uint64_t size = size_override.value_or(header.size());
    for (int i = 0; i < 8; ++i) out.put(char((size >> (8 * i)) & 0xff));
    out << header;
    for (size_t i = 0; i < data_bytes; ++i) out.put(char(i & 0xff));
}

// Opening `path` must fail with a message naming the file and containing every needle.
void expect_safetensors_open_error(const std::string& path, std::initializer_list<std::string> needles) {
    Result<SafetensorsFile> file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.ok()) << path;
    const std::string& message = file.error().message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
    for (const std::string& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
}

void expect_tensor(const SafetensorsFile& file, const std::string& name, DType dtype,
                   std::vector<int64_t> shape) {
    const TensorInfo* tensor = file.find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->dtype, dtype) << name;
    EXPECT_EQ(tensor->shape, shape) << name;
    EXPECT_EQ(tensor->nbytes, size_t(tensor->numel()) * dtype_size_bytes(dtype)) << name;
    EXPECT_EQ(tensor->file_path, file.path());
}

TEST(Safetensors, ReadsStories260k) {
    std::string path = testdata_path("stories260k/model.safetensors");
    Result<SafetensorsFile> file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->tensors().size(), 1u + 5 * 9 + 1 + 1);
    expect_tensor(*file, "model.embed_tokens.weight", DType::F32, {512, 64});
    expect_tensor(*file, "lm_head.weight", DType::F32, {512, 64});
    expect_tensor(*file, "model.norm.weight", DType::F32, {64});
    for (int layer = 0; layer < 5; ++layer) {
        std::string prefix = "model.layers." + std::to_string(layer) + ".";
        expect_tensor(*file, prefix + "input_layernorm.weight", DType::F32, {64});
        expect_tensor(*file, prefix + "post_attention_layernorm.weight", DType::F32, {64});
        expect_tensor(*file, prefix + "self_attn.q_proj.weight", DType::F32, {64, 64});
        expect_tensor(*file, prefix + "self_attn.k_proj.weight", DType::F32, {32, 64});
        expect_tensor(*file, prefix + "self_attn.v_proj.weight", DType::F32, {32, 64});
        expect_tensor(*file, prefix + "self_attn.o_proj.weight", DType::F32, {64, 64});
        expect_tensor(*file, prefix + "mlp.gate_proj.weight", DType::F32, {172, 64});
        expect_tensor(*file, prefix + "mlp.up_proj.weight", DType::F32, {172, 64});
        expect_tensor(*file, prefix + "mlp.down_proj.weight", DType::F32, {64, 172});
    }
    // README: lm_head.weight is an exact copy of the embedding.
    const TensorInfo* embed = file->find("model.embed_tokens.weight");
    const TensorInfo* head = file->find("lm_head.weight");
    EXPECT_EQ(std::memcmp(embed->data, head->data, embed->nbytes), 0);
    EXPECT_EQ(file->find("no.such.tensor"), nullptr);
}

TEST(Safetensors, ReadsReferenceLogitsWithIntegerTensors) {
    Result<SafetensorsFile> file =
        SafetensorsFile::open(testdata_path("stories260k/reference_logits.safetensors"));
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->tensors().size(), 6u);
    for (std::string name : {"bos_only_200", "prompt2"}) {
        expect_tensor(*file, name + ".input_ids", DType::I32, {16});
        expect_tensor(*file, name + ".logits_numpy_f64", DType::F32, {16, 512});
        expect_tensor(*file, name + ".logits_runc", DType::F32, {16, 512});
    }
    // prompt ids start with BOS = 1.
    int32_t first_id;
    std::memcpy(&first_id, file->find("bos_only_200.input_ids")->data, sizeof(first_id));
    EXPECT_EQ(first_id, 1);
}

TEST(Safetensors, WriteReadRoundTripAllDTypes) {
    std::string path = make_temp_dir("safetensors_round_trip") + "/t.safetensors";
    std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-3f};
    std::vector<uint16_t> bf16 = {0x3f80, 0xbf80, 0x4000};
    std::vector<uint16_t> f16 = {0x3c00, 0xc000};
    std::vector<int32_t> i32 = {1, -2, 3};
    std::vector<int64_t> i64 = {int64_t(1) << 40, -5};
    std::vector<TensorToWrite> tensors = {
        {"b.f32", DType::F32, {2, 3}, f32.data()}, {"a.bf16", DType::BF16, {3}, bf16.data()},
        {"c.f16", DType::F16, {1, 2}, f16.data()}, {"d.i32", DType::I32, {3}, i32.data()},
        {"e.i64", DType::I64, {2}, i64.data()},    {"scalar", DType::F32, {}, f32.data()},
        {"empty", DType::F32, {0, 4}, nullptr},
    };
    Status status = write_safetensors(path, tensors, {{"format", "pt"}});
    ASSERT_TRUE(status.ok()) << status.error().message;
    Result<SafetensorsFile> file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->tensors().size(), tensors.size());
    EXPECT_EQ(file->metadata().at("format"), "pt");
    // The writer pads the header so that the data buffer (and its first tensor) is 8-byte aligned;
    // tensors follow back to back, as HF's readers require.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(file->find("b.f32")->data) % 8, 0u);
    for (const TensorToWrite& written : tensors) {
        const TensorInfo* read = file->find(written.name);
        ASSERT_NE(read, nullptr) << written.name;
        EXPECT_EQ(read->dtype, written.dtype);
        EXPECT_EQ(read->shape, written.shape);
        EXPECT_EQ(read->nbytes, tensor_nbytes(written.dtype, written.shape));
        if (read->nbytes) {
            EXPECT_EQ(std::memcmp(read->data, written.data, read->nbytes), 0) << written.name;
        }
    }
}

TEST(Safetensors, WriterRejectsDuplicateNames) {
    std::string path = make_temp_dir("safetensors_dup") + "/t.safetensors";
    float value = 1;
    Status status = write_safetensors(path, {{"x", DType::F32, {1}, &value}, {"x", DType::F32, {1}, &value}});
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("duplicate tensor name 'x'"), std::string::npos)
        << status.error().message;
}

TEST(Safetensors, AcceptsTensorsListedOutOfOffsetOrderWhenTheyTileTheBuffer) {
    std::string path = make_temp_dir("safetensors_order") + "/t.safetensors";
    write_raw(path,
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},)"
              R"("b":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})",
              20);
    Result<SafetensorsFile> file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    const auto* base = static_cast<const unsigned char*>(file->find("b")->data);
    EXPECT_EQ(static_cast<const unsigned char*>(file->find("a")->data), base + 12);
}

// Issue 10, item 11: overlapping data_offsets were accepted silently.
TEST(Safetensors, RejectsOverlappingDataOffsetsNamingBothTensors) {
    std::string path = make_temp_dir("safetensors_overlap") + "/t.safetensors";
    write_raw(path,
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
              R"("b":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})",
              16);
    expect_safetensors_open_error(
        path, {"tensor 'a' (data_offsets [8, 16]) overlaps tensor 'b' (data_offsets [0, 12])"});
    Result<SafetensorsFile> file = SafetensorsFile::open(path);
    EXPECT_EQ(file.error().kind, ErrorKind::Corrupt);
    EXPECT_EQ(file.error().subject, path);
}

TEST(Safetensors, RejectsGapsAndTrailingBytesInTheDataBuffer) {
    std::string path = make_temp_dir("safetensors_gap") + "/t.safetensors";
    write_raw(path,
              R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
              12);
    expect_safetensors_open_error(path, {"gap: bytes [4, 8) before tensor 'b'"});
    write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12);
    expect_safetensors_open_error(path, {"data buffer is 12 bytes but its tensors end at byte 4"});
}

TEST(Safetensors, RejectsMissingFile) {
    expect_safetensors_open_error("/nonexistent/x.safetensors", {"cannot open"});
}

TEST(Safetensors, RejectsFileShorterThanHeaderSize) {
    std::string path = make_temp_dir("safetensors_short") + "/t.safetensors";
    std::ofstream(path, std::ios::binary) << "abc";
    expect_safetensors_open_error(path, {"shorter than the 8-byte"});
}

TEST(Safetensors, RejectsHeaderSizeBeyondFile) {
    std::string path = make_temp_dir("safetensors_header_size") + "/t.safetensors";
    write_raw(path, "{}", 0, uint64_t(1) << 40);
    expect_safetensors_open_error(path, {"header size", "beyond the end of the file"});
    write_raw(path, "{}", 0, ~uint64_t(0));  // would overflow a naive 8 + size
    expect_safetensors_open_error(path, {"beyond the end of the file"});
}

TEST(Safetensors, RejectsMalformedJsonHeader) {
    std::string path = make_temp_dir("safetensors_bad_json") + "/t.safetensors";
    write_raw(path, R"({"a":{"dtype":"F32",)", 0);
    expect_safetensors_open_error(path, {"JSON header: malformed JSON"});
}

TEST(Safetensors, RejectsHeaderThatIsNotAnObject) {
    std::string path = make_temp_dir("safetensors_not_object") + "/t.safetensors";
    write_raw(path, "[1,2,3]", 0);
    expect_safetensors_open_error(path, {"not an object"});
    write_raw(path, R"({"a": 5})", 0);
    expect_safetensors_open_error(path, {"'a'", "not an object"});
}

TEST(Safetensors, RejectsUnknownDTypeNamingItAndTheSupportedOnes) {
    std::string path = make_temp_dir("safetensors_dtype") + "/t.safetensors";
    write_raw(path, R"({"w":{"dtype":"F8_E5M2","shape":[4],"data_offsets":[0,4]}})", 4);
    expect_safetensors_open_error(path, {"'w'", "F8_E5M2", "F32, BF16, F16, I32, I64, I8, U8, F8_E4M3"});
}

TEST(Safetensors, RejectsHeaderThatLiesAboutSizes) {
    std::string path = make_temp_dir("safetensors_lies") + "/t.safetensors";
    write_raw(path, R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "span 20 bytes", "needs 24 bytes"});
    write_raw(path, R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "negative"});
    write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "end before"});
    write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "data_offsets"});
    write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-4,12]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "data_offsets"});
    write_raw(path, R"({"w":{"shape":[4],"data_offsets":[0,16]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "dtype"});
    write_raw(path, R"({"w":{"dtype":"F32","data_offsets":[0,16]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "shape"});
    // numel * size overflows 64 bits: must not wrap around to a small size.
    write_raw(path, R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "too large"});
}

TEST(Safetensors, RejectsOffsetsBeyondTheFile) {
    std::string path = make_temp_dir("safetensors_beyond") + "/t.safetensors";
    write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})", 24);
    expect_safetensors_open_error(path, {"'w'", "beyond the 24-byte data buffer"});
}

TEST(Safetensors, RejectsDeeplyNestedHeaderWithoutCrashing) {
    std::string path = make_temp_dir("safetensors_deep") + "/t.safetensors";
    write_raw(path, "{\"__metadata__\":" + std::string(100000, '[') + std::string(100000, ']') + "}", 0);
    expect_safetensors_open_error(path, {"JSON header: JSON nested deeper than 8 levels"});
    EXPECT_EQ(SafetensorsFile::open(path).error().kind, ErrorKind::ResourceExhausted);
}

TEST(Safetensors, RejectsTruncatedFile) {
    std::string dir = make_temp_dir("safetensors_truncated");
    std::string path = dir + "/t.safetensors";
    std::vector<float> data(1000, 1.0f);
    ASSERT_TRUE(write_safetensors(path, {{"w", DType::F32, {1000}, data.data()}}).ok());
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
    expect_safetensors_open_error(path, {"'w'", "truncated"});
}

}  // namespace
}  // namespace lmrun
