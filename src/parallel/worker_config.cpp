#include "parallel/worker_config.h"

#include <nlohmann/json.hpp>

namespace lmrun::parallel {

std::string to_json(const WorkerConfig& config) {
    const ModelRunnerConfig& runner = config.runner;
    nlohmann::json placements = nlohmann::json::array();
    for (const RankPlacement& placement : config.placements) {
        placements.push_back({{"rank", placement.rank},
                              {"cpus", placement.cpus},
                              {"num_threads", placement.num_threads},
                              {"numa_node", placement.numa_node}});
    }
    nlohmann::json json = {
        {"model_dir", config.model_dir},
        {"dtype", dtype_name(config.dtype)},
        {"int8_at_load", config.quantization.int8_at_load},
        {"quantize_embeddings", config.quantization.quantize_embeddings},
        {"packed_cache_dir", config.packed_cache.dir},
        {"packed_cache_max_bytes", config.packed_cache.max_bytes},
        {"threads_per_rank", config.threads_per_rank},
        {"placements", placements},
        {"runner",
         {{"max_num_seqs", runner.max_num_seqs},
          {"max_num_batched_tokens", runner.max_num_batched_tokens},
          {"max_model_len", runner.max_model_len},
          {"block_size", runner.block_size},
          {"kv_cache_memory_bytes", runner.kv_cache_memory_bytes},
          {"kv_cache_memory_fraction", runner.kv_cache_memory_fraction},
          {"use_decode_plans", runner.use_decode_plans},
          {"kv_cache_dtype", runner.kv_cache_dtype},
          {"ranks_sharing_memory", runner.ranks_sharing_memory}}},
    };
    return json.dump();
}

Result<WorkerConfig> worker_config_from_json(std::string_view text) {
    nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object())
        return make_error(ErrorKind::Internal, "malformed worker configuration from rank 0");
    WorkerConfig config;
    try {
        config.model_dir = json.at("model_dir").get<std::string>();
        config.dtype =
            json.at("dtype").get<std::string>() == dtype_name(DType::F32) ? DType::F32 : DType::BF16;
        config.quantization.int8_at_load = json.at("int8_at_load").get<bool>();
        config.quantization.quantize_embeddings = json.at("quantize_embeddings").get<bool>();
        config.packed_cache.dir = json.at("packed_cache_dir").get<std::string>();
        config.packed_cache.max_bytes = json.at("packed_cache_max_bytes").get<int64_t>();
        config.threads_per_rank = json.at("threads_per_rank").get<int>();
        for (const auto& item : json.at("placements")) {
            RankPlacement placement;
            placement.rank = item.at("rank").get<int>();
            placement.cpus = item.at("cpus").get<std::vector<int>>();
            placement.num_threads = item.at("num_threads").get<int>();
            placement.numa_node = item.at("numa_node").get<int>();
            config.placements.push_back(placement);
        }
        const auto& runner = json.at("runner");
        config.runner.max_num_seqs = runner.at("max_num_seqs").get<int64_t>();
        config.runner.max_num_batched_tokens = runner.at("max_num_batched_tokens").get<int64_t>();
        config.runner.max_model_len = runner.at("max_model_len").get<int64_t>();
        config.runner.block_size = runner.at("block_size").get<int64_t>();
        config.runner.kv_cache_memory_bytes = runner.at("kv_cache_memory_bytes").get<int64_t>();
        config.runner.kv_cache_memory_fraction = runner.at("kv_cache_memory_fraction").get<double>();
        config.runner.use_decode_plans = runner.at("use_decode_plans").get<bool>();
        config.runner.kv_cache_dtype = runner.at("kv_cache_dtype").get<std::string>();
        config.runner.ranks_sharing_memory = runner.at("ranks_sharing_memory").get<int>();
    } catch (const nlohmann::json::exception& error) {
        return make_error(ErrorKind::Internal, "worker configuration from rank 0: {}", error.what());
    }
    return config;
}

}  // namespace lmrun::parallel
