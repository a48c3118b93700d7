#include "model/random_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/parallel.h"
#include "core/tensor.h"
#include "kernels/linear_int8.h"

namespace lmrun {
namespace {

namespace fs = std::filesystem;

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& text) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
    return hash;
}

// Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall, variance
// 4/12) rescaled. Tails stop at +-3.46 sigma, which random test weights do not miss.
float approx_normal(uint64_t bits) {
    float sum = 0;
    for (int i = 0; i < 4; ++i) sum += (float((bits >> (16 * i)) & 0xffff) + 0.5f) * (1.0f / 65536.0f);
    return (sum - 2.0f) * 1.7320508f;
}

bool is_norm_weight(const std::string& name) {
    return name.ends_with("norm.weight");  // input/post_attention_layernorm, q_norm, k_norm, model.norm
}

// Fills `data` (numel elements of `dtype`) for tensor `name`.
void fill_random(const std::string& name, DType dtype, int64_t numel, uint64_t seed, float std, void* data) {
    uint64_t key = splitmix64(seed ^ fnv1a(name));
    float mean = is_norm_weight(name) ? 1.0f : 0.0f;
    constexpr int64_t kBlock = 4096;
    parallel_for((numel + kBlock - 1) / kBlock, [&](int64_t block_begin, int64_t block_end) {
        float values[kBlock];
        for (int64_t block = block_begin; block < block_end; ++block) {
            int64_t begin = block * kBlock;
            int64_t count = std::min(kBlock, numel - begin);
            for (int64_t i = 0; i < count; ++i)
                values[i] = mean + std * approx_normal(splitmix64(key + uint64_t(begin + i)));
            convert_from_f32(values,
                             static_cast<unsigned char*>(data) + size_t(begin) * dtype_size_bytes(dtype),
                             dtype, size_t(count));
        }
    });
}

Status write_text_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return make_error("{}: cannot create file", path);
    out << text;
    out.close();
    if (!out) return make_error("{}: write failed", path);
    return ok_status();
}

constexpr std::string_view kScaleSuffix = ".weight_scale";

// The int8 weight (I8 tensor named `<layer>.weight`) or its scales (`<layer>.weight_scale`) of a
// quantized layer: the float weight of the same name is generated, rounded to the checkpoint
// dtype and quantized per row (or per tensor) as the kernels quantize.
void fill_int8(const TensorToWrite& tensor, const RandomCheckpointOptions& options, void* out) {
    const bool is_scale = tensor.name.ends_with(kScaleSuffix);
    const std::string weight_name =
        is_scale ? tensor.name.substr(0, tensor.name.size() - kScaleSuffix.size()) + ".weight" : tensor.name;
    const RandomInt8Options& int8 = *options.int8;
    // The weight's shape: [out, in] (for a scale, recovered from the layout by name).
    std::vector<TensorToWrite> layout = hf_checkpoint_layout(options.config, options.dtype);
    auto weight =
        std::find_if(layout.begin(), layout.end(), [&](const auto& t) { return t.name == weight_name; });
    LMRUN_CHECK(weight != layout.end(), "no weight %s", weight_name.c_str());
    const int64_t rows = weight->shape[0], cols = weight->shape[1];
    std::vector<float> values(static_cast<size_t>(rows * cols));
    std::vector<uint16_t> rounded(values.size() * 2);
    fill_random(weight_name, options.dtype, rows * cols, options.seed, options.std, rounded.data());
    convert_to_f32(rounded.data(), options.dtype, values.data(), values.size());
    std::vector<float> scales(static_cast<size_t>(rows));
    std::vector<int8_t> q(values.size());
    if (int8.strategy == ScaleStrategy::Channel) {
        for (int64_t r = 0; r < rows; ++r)
            scales[r] = kernels::quantize_row_int8_reference(&values[r * cols], cols, &q[r * cols]);
    } else {
        const float scale = kernels::quantize_row_int8_reference(values.data(), rows * cols, q.data());
        std::fill(scales.begin(), scales.end(), scale);
    }
    if (!is_scale) {
        std::memcpy(out, q.data(), q.size());
        return;
    }
    const int64_t count = tensor.shape.size() == 2 ? tensor.shape[0] : 1;
    convert_from_f32(scales.data(), out, tensor.dtype, size_t(count));
}

// Writes `tensors` (with random data) to one safetensors file, reusing `buffer`.
Status write_random_file(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const RandomCheckpointOptions& options, Tensor& buffer) {
    LMRUN_ASSIGN_OR_RETURN(SafetensorsWriter writer,
                           SafetensorsWriter::create(path, tensors, {{"format", "pt"}}));
    for (const TensorToWrite& tensor : tensors) {
        size_t nbytes = tensor_nbytes(tensor.dtype, tensor.shape);
        int64_t numel = int64_t(nbytes / dtype_size_bytes(tensor.dtype));
        if (tensor.dtype == DType::I8 || tensor.name.ends_with(kScaleSuffix)) {
            fill_int8(tensor, options, buffer.raw());
        } else {
            fill_random(tensor.name, tensor.dtype, numel, options.seed, options.std, buffer.raw());
        }
        LMRUN_RETURN_IF_ERROR(writer.write_next(buffer.raw(), nbytes));
    }
    return writer.finish();
}

// Greedy split in file order: a new shard starts when the next tensor would overflow.
std::vector<std::vector<TensorToWrite>> split_shards(const std::vector<TensorToWrite>& layout,
                                                     int64_t max_bytes) {
    std::vector<std::vector<TensorToWrite>> shards(1);
    int64_t shard_bytes = 0;
    for (const TensorToWrite& tensor : layout) {
        int64_t nbytes = int64_t(tensor_nbytes(tensor.dtype, tensor.shape));
        if (!shards.back().empty() && shard_bytes + nbytes > max_bytes) {
            shards.emplace_back();
            shard_bytes = 0;
        }
        shards.back().push_back(tensor);
        shard_bytes += nbytes;
    }
    return shards;
}

Status write_sharded(const std::string& out_dir, const std::vector<TensorToWrite>& layout,
                     const RandomCheckpointOptions& options, Tensor& buffer) {
    auto shards = split_shards(layout, options.max_shard_bytes);
    nlohmann::json weight_map = nlohmann::json::object();
    size_t total_bytes = 0;
    for (size_t i = 0; i < shards.size(); ++i) {
        std::string file_name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
        LMRUN_RETURN_IF_ERROR(
            write_random_file((fs::path(out_dir) / file_name).string(), shards[i], options, buffer));
        for (const TensorToWrite& tensor : shards[i]) {
            weight_map[tensor.name] = file_name;
            total_bytes += tensor_nbytes(tensor.dtype, tensor.shape);
        }
    }
    nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    return write_text_file((fs::path(out_dir) / "model.safetensors.index.json").string(), index.dump(2));
}

void add_layer_tensors(const ModelConfig& c, int64_t layer, DType dtype, std::vector<TensorToWrite>& out) {
    std::string prefix = fmt::format("model.layers.{}.", layer);
    int64_t q_rows = c.num_attention_heads * c.head_dim;
    int64_t kv_rows = c.num_key_value_heads * c.head_dim;
    auto add = [&](const std::string& name, std::vector<int64_t> shape) {
        out.push_back(TensorToWrite{prefix + name, dtype, std::move(shape), nullptr});
    };
    add("input_layernorm.weight", {c.hidden_size});
    add("self_attn.q_proj.weight", {q_rows, c.hidden_size});
    add("self_attn.k_proj.weight", {kv_rows, c.hidden_size});
    add("self_attn.v_proj.weight", {kv_rows, c.hidden_size});
    if (c.attention_bias) {
        add("self_attn.q_proj.bias", {q_rows});
        add("self_attn.k_proj.bias", {kv_rows});
        add("self_attn.v_proj.bias", {kv_rows});
    }
    if (c.qk_norm) {
        add("self_attn.q_norm.weight", {c.head_dim});
        add("self_attn.k_norm.weight", {c.head_dim});
    }
    add("self_attn.o_proj.weight", {c.hidden_size, q_rows});
    add("post_attention_layernorm.weight", {c.hidden_size});
    add("mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size});
    add("mlp.up_proj.weight", {c.intermediate_size, c.hidden_size});
    add("mlp.down_proj.weight", {c.hidden_size, c.intermediate_size});
}

}  // namespace

std::vector<TensorToWrite> hf_checkpoint_layout(const ModelConfig& config, DType dtype,
                                                const RandomInt8Options* int8) {
    std::vector<TensorToWrite> layout;
    layout.push_back({"model.embed_tokens.weight", dtype, {config.vocab_size, config.hidden_size}, nullptr});
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer)
        add_layer_tensors(config, layer, dtype, layout);
    layout.push_back({"model.norm.weight", dtype, {config.hidden_size}, nullptr});
    if (!config.tie_word_embeddings)
        layout.push_back({"lm_head.weight", dtype, {config.vocab_size, config.hidden_size}, nullptr});
    if (int8 == nullptr) return layout;
    // Linear layers the int8 scheme covers: I8 weights, each followed by its scales.
    CompressedTensorsConfig scheme{int8->strategy, {"Linear"}, int8->ignore};
    std::vector<TensorToWrite> quantized;
    for (TensorToWrite& tensor : layout) {
        const bool linear = tensor.shape.size() == 2 && tensor.name.ends_with(".weight") &&
                            tensor.name != "model.embed_tokens.weight";
        const std::string layer = tensor.name.substr(0, tensor.name.size() - 7);
        if (!linear || !scheme.quantizes(layer)) {
            quantized.push_back(tensor);
            continue;
        }
        quantized.push_back({tensor.name, DType::I8, tensor.shape, nullptr});
        std::vector<int64_t> scale_shape = int8->strategy == ScaleStrategy::Channel
                                               ? std::vector<int64_t>{tensor.shape[0], 1}
                                               : std::vector<int64_t>{1};
        quantized.push_back({layer + std::string(kScaleSuffix), int8->scale_dtype, scale_shape, nullptr});
    }
    return quantized;
}

Status write_random_checkpoint(const std::string& out_dir, const RandomCheckpointOptions& options) {
    if (options.dtype != DType::F32 && options.dtype != DType::BF16 && options.dtype != DType::F16)
        return make_error("{}: random checkpoints are F32, BF16 or F16, not {}", out_dir,
                          dtype_name(options.dtype));
    if (options.max_shard_bytes < 0) return make_error("{}: max_shard_bytes must be >= 0", out_dir);
    ModelConfig config = options.config;
    config.torch_dtype = options.dtype;
    nlohmann::json config_json = model_config_to_json(config);
    if (options.int8) {
        CompressedTensorsConfig scheme{options.int8->strategy, {"Linear"}, options.int8->ignore};
        config_json["quantization_config"] = compressed_tensors_config_to_json(scheme);
    }
    // The config must read back: this rejects zero sizes, bad head counts and the like.
    LMRUN_RETURN_IF_ERROR(parse_model_config(config_json, out_dir + " (random model config)"));

    std::error_code error;
    fs::create_directories(out_dir, error);
    if (error) return make_error("{}: cannot create folder: {}", out_dir, error.message());
    LMRUN_RETURN_IF_ERROR(write_text_file((fs::path(out_dir) / "config.json").string(), config_json.dump(2)));
    // A stale weights file of the other form would shadow (or be shadowed by) the new one.
    fs::remove(fs::path(out_dir) / "model.safetensors", error);
    fs::remove(fs::path(out_dir) / "model.safetensors.index.json", error);

    std::vector<TensorToWrite> layout =
        hf_checkpoint_layout(config, options.dtype, options.int8 ? &*options.int8 : nullptr);
    size_t max_tensor_bytes = 0;
    for (const TensorToWrite& tensor : layout)
        max_tensor_bytes = std::max(max_tensor_bytes, tensor_nbytes(tensor.dtype, tensor.shape));
    Tensor buffer = Tensor::zeros(DType::F32, {int64_t((max_tensor_bytes + 3) / 4)});
    if (options.max_shard_bytes == 0)
        return write_random_file((fs::path(out_dir) / "model.safetensors").string(), layout, options, buffer);
    return write_sharded(out_dir, layout, options, buffer);
}

ModelConfig qwen3_0_6b_config() {
    ModelConfig config = default_model_config(ModelArch::Qwen3);
    config.hidden_size = 1024;
    config.intermediate_size = 3072;
    config.num_hidden_layers = 28;
    config.num_attention_heads = 16;
    config.num_key_value_heads = 8;
    config.head_dim = 128;
    config.vocab_size = 151936;
    config.max_position_embeddings = 40960;
    config.rms_norm_eps = 1e-6;
    config.rope_theta = 1e6;
    config.tie_word_embeddings = true;
    config.torch_dtype = DType::BF16;
    config.bos_token_id = 151643;
    config.eos_token_ids = {151645};
    return config;
}

}  // namespace lmrun
