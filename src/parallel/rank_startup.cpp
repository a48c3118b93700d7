#include "parallel/rank_startup.h"

#include <cstring>

#include "core/logging.h"
#include "core/timer.h"
#include "model/causal_lm.h"

namespace lmrun::parallel {
namespace {

// One rank's report, fixed-size so that rank 0 can gather them.
struct StatusRecord {
    int32_t failed = 0;
    int32_t kind = 0;
    char subject[512] = {};
    char message[3576] = {};
};
static_assert(sizeof(StatusRecord) == 4096);

void copy_text(char* to, size_t capacity, const std::string& text) {
    const size_t length = std::min(capacity - 1, text.size());
    std::memcpy(to, text.data(), length);
    to[length] = '\0';
}

Error group_failed() {
    return make_error(ErrorKind::Unavailable, "a tensor-parallel rank failed during start-up");
}

}  // namespace

Result<std::unique_ptr<CausalLM>> load_rank_model(const std::string& model_dir, DType dtype,
                                                  const WeightQuantization& quantization,
                                                  const ParallelConfig& parallel, double* load_seconds,
                                                  const PackedCacheOptions& packed_cache) {
    LMRUN_ASSIGN_OR_RETURN(ModelConfig model_config, load_model_config(model_dir));
    Stopwatch load_timer;
    LMRUN_ASSIGN_OR_RETURN(
        std::unique_ptr<CausalLM> model,
        CausalLM::load(model_dir, model_config, dtype, parallel, quantization, packed_cache));
    log_info("loaded {} ({} layers, {:.1f} MiB of {}{} weights{}) in {:.2f} s", model_config.architecture,
             model_config.num_hidden_layers, double(model->weight_nbytes()) / (1 << 20), dtype_name(dtype),
             model->has_int8_weights() ? " and int8" : "",
             parallel.tp_size > 1 ? fmt::format(", rank {} of {}", parallel.tp_rank, parallel.tp_size) : "",
             load_timer.elapsed_seconds());
    if (load_seconds) *load_seconds = load_timer.elapsed_seconds();
    return model;
}

Result<WorkerConfig> worker_config_for(const ExecutorConfig& config, const ModelConfig& model,
                                       int ranks_sharing_memory) {
    WorkerConfig worker_config;
    worker_config.model_dir = config.model_dir;
    worker_config.dtype = config.dtype;
    worker_config.quantization = config.quantization;
    worker_config.packed_cache = config.packed_cache;
    LMRUN_ASSIGN_OR_RETURN(worker_config.runner, resolve_runner_config(config.runner, model));
    worker_config.runner.ranks_sharing_memory = ranks_sharing_memory;
    return worker_config;
}

Status agree_on_status(ProcessGroup& group, const Status& local) {
    if (group.size() == 1) return local;
    StatusRecord mine;
    if (!local.ok()) {
        mine.failed = 1;
        mine.kind = int32_t(local.error().kind);
        copy_text(mine.subject, sizeof(mine.subject), local.error().subject);
        copy_text(mine.message, sizeof(mine.message),
                  "rank " + std::to_string(group.rank()) + ": " + local.error().message);
    }
    std::vector<StatusRecord> all(size_t(group.size()));
    group.gather(&mine, sizeof(mine), all.data());
    const StatusRecord ok;
    const StatusRecord* verdict = &mine;  // on rank 0: the first failure, else an ok record
    if (group.rank() == 0) {
        verdict = &all[0];
        for (const StatusRecord& record : all) {
            if (record.failed) {
                verdict = &record;
                break;
            }
        }
        if (!verdict->failed) verdict = &ok;
        std::span<const std::byte> sent = group.broadcast(std::as_bytes(std::span(verdict, 1)));
        if (sent.size() != sizeof(StatusRecord)) return group_failed();
    } else {
        std::span<const std::byte> received = group.broadcast({});
        if (received.size() != sizeof(StatusRecord)) return group_failed();
        verdict = reinterpret_cast<const StatusRecord*>(received.data());
    }
    if (group.failed()) return group_failed();
    if (!verdict->failed) return ok_status();
    return Error{verdict->message, ErrorKind(verdict->kind), verdict->subject};
}

Result<std::unique_ptr<ModelRunner>> start_rank(ProcessGroup& group, const WorkerConfig& config,
                                                double* load_seconds) {
    ParallelConfig parallel{group.rank(), group.size(), group.size() > 1 ? &group : nullptr,
                            config.runner.ranks_sharing_memory};
    Result<std::unique_ptr<CausalLM>> model = load_rank_model(
        config.model_dir, config.dtype, config.quantization, parallel, load_seconds, config.packed_cache);
    LMRUN_RETURN_IF_ERROR(agree_on_status(group, model.ok() ? ok_status() : Status(model.error())));
    auto runner = ModelRunner::create(std::move(model).value(), config.runner, group);
    LMRUN_RETURN_IF_ERROR(agree_on_status(group, runner.ok() ? ok_status() : Status(runner.error())));
    return std::move(runner).value();
}

}  // namespace lmrun::parallel
