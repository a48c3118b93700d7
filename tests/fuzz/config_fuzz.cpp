// Fuzzes config.json: the bounded JSON reader, parse_model_config and the memory estimate.
// An accepted config must be within the limits, have a finite memory estimate, and read
// back to itself from model_config_to_json.
#include <cmath>
#include <string_view>

#include "core/json_io.h"
#include "fuzz_util.h"
#include "model/config.h"
#include "model/config_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lmrun;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    Result<nlohmann::json> json = parse_json(text, "config.json", JsonLimits{64, size_t(16) << 20});
    if (!json.ok()) return 0;
    Result<ModelConfig> config = parse_model_config(json.value(), "config.json");
    if (!config.ok()) {
        fuzz::require(config.error().message.rfind("config.json: ", 0) == 0, "errors name the file");
        return 0;
    }
    fuzz::require(check_config_limits(config.value(), "config.json").ok(),
                  "accepted configs are within limits");
    for (DType dtype : {DType::F32, DType::BF16}) {
        const double bytes = model_memory_bytes(config.value(), dtype);
        fuzz::require(std::isfinite(bytes) && bytes > 0, "memory estimate is finite");
        ModelMemoryLayout layout{
            .weight_dtype = dtype, .int8_qkv_layers = 1, .int8_lm_head = true, .tp_size = 2};
        fuzz::require(std::isfinite(rank_model_memory_bytes(config.value(), layout)),
                      "shard estimate is finite");
        (void)check_model_fits_memory(config.value(), layout, int64_t(1) << 34, "config.json");
    }
    Result<ModelConfig> again = parse_model_config(model_config_to_json(config.value()), "round trip");
    fuzz::require(again.ok(), "model_config_to_json reads back");
    fuzz::require(again->hidden_size == config->hidden_size && again->head_dim == config->head_dim &&
                      again->num_key_value_heads == config->num_key_value_heads &&
                      again->eos_token_ids == config->eos_token_ids,
                  "round trip keeps the shape");
    return 0;
}
