#include "cli/bench_structured.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "cli/bench_statistics.h"
#include "core/logging.h"
#include "core/timer.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"

namespace lmrun::cli {
namespace {

using structured::StructuredOutputsParams;

// Typical schemas: tool arguments, a nested record, a list of records, enums and formats.
const char* const kSchemas[] = {
    R"({"type": "object", "properties": {"location": {"type": "string", "description": "City and country"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["location", "unit"], "additionalProperties": false})",
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"}, "address": {"type": "object", "properties": {"street": {"type": "string"},
        "city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["street", "city"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5}}, "required": ["name", "age"]})",
    R"({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
        "price": {"type": "number", "minimum": 0, "maximum": 10000}}, "required": ["sku", "qty", "price"], "additionalProperties": false},
        "minItems": 1, "maxItems": 20}, "date": {"type": "string", "format": "date"}, "status": {"enum": ["open", "paid", "void"]}},
        "required": ["items", "date", "status"], "additionalProperties": false})",
    R"({"$defs": {"step": {"type": "object", "properties": {"title": {"type": "string", "maxLength": 60},
        "done": {"type": "boolean"}, "substeps": {"type": "array", "items": {"$ref": "#/$defs/step"}, "maxItems": 3}},
        "required": ["title", "done"]}}, "type": "object", "properties": {"plan": {"type": "array", "items": {"$ref": "#/$defs/step"}, "maxItems": 8},
        "id": {"type": "string", "format": "uuid"}}, "required": ["plan", "id"]})",
};

// The decode workload's schema: a long, bounded list, so that each request keeps decoding for a while.
const char* const kDecodeSchema =
    R"({"type": "object", "properties": {"entries": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 24}, "qty": {"type": "integer", "minimum": 0, "maximum": 1000},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}},
        "required": ["name", "qty", "tags"], "additionalProperties": false}, "maxItems": 64}},
        "required": ["entries"], "additionalProperties": false})";

// The 1-minute load average: on a shared machine, how much else was running.
double load_average() {
    std::ifstream file("/proc/loadavg");
    double load = -1;
    file >> load;
    return load;
}

struct DecodeRun {
    double seconds = 0;      // from the step after every prompt was prefilled to the end
    double cpu_seconds = 0;  // CPU time of the whole process in that time
    int64_t tokens = 0;      // generated in that time
    std::vector<std::vector<int32_t>> outputs;
};

// Runs `requests` to completion; times the decode phase.
Result<DecodeRun> run_batch(LLMEngine& engine, const std::vector<std::vector<int32_t>>& prompts,
                            const std::vector<SamplingParams>& params) {
    for (size_t i = 0; i < prompts.size(); ++i)
        LMRUN_RETURN_IF_ERROR(engine.add_request(fmt::format("r{}", i), prompts[i], params[i]));
    DecodeRun run;
    run.outputs.resize(prompts.size());
    // The timed decode starts once every request sampled its first token (the prefill is done).
    const int64_t tokens_before = engine.stats().num_generation_tokens;
    bool decoding = false;
    int64_t tokens_at_start = 0;
    double cpu_at_start = 0;
    Stopwatch timer;
    while (engine.has_unfinished_requests()) {
        for (RequestOutput& output : engine.step()) {
            run.outputs[std::stoul(output.request_id.substr(1))] = std::move(output.outputs[0].token_ids);
        }
        const int64_t generated = engine.stats().num_generation_tokens;
        if (!decoding && generated - tokens_before >= int64_t(prompts.size())) {
            decoding = true;
            tokens_at_start = generated;
            cpu_at_start = process_cpu_seconds();
            timer.reset();
        }
    }
    run.seconds = timer.elapsed_seconds();
    run.cpu_seconds = process_cpu_seconds() - cpu_at_start;
    run.tokens = engine.stats().num_generation_tokens - tokens_at_start;
    return run;
}

struct CompileTimes {
    std::vector<double> cold_ms, cached_ms;
    // Compiling and then filling every automaton state's mask entry, as a compiler that
    // precomputes them all would (lmrun fills them lazily, on each state's first visit).
    std::vector<double> eager_ms;
    std::vector<int64_t> num_states;
};

CompileTimes measure_compile(const std::shared_ptr<const structured::TokenVocabulary>& vocabulary,
                             int64_t repeats) {
    CompileTimes times;
    for (const char* schema : kSchemas) {
        std::vector<double> cold, cached, eager;
        int64_t num_states = 0;
        for (int64_t r = 0; r < repeats; ++r) {
            structured::GrammarCompiler compiler(vocabulary);
            Stopwatch stopwatch;
            auto first = compiler.compile(StructuredOutputsParams::json_schema(schema));
            cold.push_back(stopwatch.elapsed_seconds() * 1e3);
            stopwatch.reset();
            auto again = compiler.compile(StructuredOutputsParams::json_schema(schema));
            cached.push_back(stopwatch.elapsed_seconds() * 1e3);
            if (!first.ok() || !again.ok()) {
                log_error("bench schema failed to compile");
                continue;
            }
            const structured::PushdownAutomaton& automaton = (*first)->automaton();
            stopwatch.reset();
            for (int32_t state = 0; state < automaton.num_states(); ++state) {
                if (automaton.flags(state) & structured::PushdownAutomaton::kScans)
                    (*first)->mask_cache().get(state);
            }
            eager.push_back(cold.back() + stopwatch.elapsed_seconds() * 1e3);
            num_states = automaton.num_states();
        }
        times.cold_ms.push_back(median(cold));
        times.cached_ms.push_back(median(cached));
        times.eager_ms.push_back(median(eager));
        times.num_states.push_back(num_states);
    }
    return times;
}

struct MaskTimes {
    std::vector<double> wall_ms;  // includes any time the thread was not running (a shared machine)
    std::vector<double> cpu_ms;   // this thread's CPU time
};

// Every mask of the constrained outputs, in order: first against a freshly compiled
// grammar (cold: each automaton state's mask computed on its first visit), then the
// same tokens again (warm: the grammar as a server holds it, cached by schema).
std::pair<MaskTimes, MaskTimes> measure_masks(
    const std::shared_ptr<const structured::TokenVocabulary>& vocabulary,
    const std::vector<std::vector<int32_t>>& outputs) {
    structured::GrammarCompiler compiler(vocabulary);
    auto compiled = compiler.compile(StructuredOutputsParams::json_schema(kDecodeSchema));
    std::pair<MaskTimes, MaskTimes> times;
    if (!compiled.ok()) return times;
    std::vector<uint32_t> mask(size_t(vocabulary->num_mask_words()));
    for (MaskTimes* pass : {&times.first, &times.second}) {
        for (const auto& tokens : outputs) {
            structured::GrammarMatcher matcher(*compiled);
            for (int32_t token : tokens) {
                const double cpu_start = thread_cpu_seconds();
                Stopwatch stopwatch;
                matcher.fill_next_token_bitmask(mask);
                pass->wall_ms.push_back(stopwatch.elapsed_seconds() * 1e3);
                pass->cpu_ms.push_back((thread_cpu_seconds() - cpu_start) * 1e3);
                if (!matcher.accept_token(token)) break;
            }
        }
    }
    return times;
}

nlohmann::json mask_json(const MaskTimes& times) {
    return {{"count", times.cpu_ms.size()},
            {"cpu_median_ms", median(times.cpu_ms)},
            {"cpu_p99_ms", percentile(times.cpu_ms, 0.99)},
            {"cpu_max_ms", percentile(times.cpu_ms, 1.0)},
            {"wall_median_ms", median(times.wall_ms)},
            {"wall_p99_ms", percentile(times.wall_ms, 0.99)},
            {"wall_max_ms", percentile(times.wall_ms, 1.0)}};
}

void print_masks(const char* label, const MaskTimes& times) {
    std::cout << fmt::format(
        "  token mask, {} ({} masks): CPU median {:.4f} ms, p99 {:.3f} ms, max {:.3f} ms; wall median {:.4f} "
        "ms, "
        "p99 {:.3f} ms, max {:.3f} ms   (targets 0.2 / 2 ms)\n",
        label, times.cpu_ms.size(), median(times.cpu_ms), percentile(times.cpu_ms, 0.99),
        percentile(times.cpu_ms, 1.0), median(times.wall_ms), percentile(times.wall_ms, 0.99),
        percentile(times.wall_ms, 1.0));
}

}  // namespace

Result<nlohmann::json> run_structured_bench(const EngineConfig& config,
                                            const StructuredBenchOptions& options) {
    LMRUN_ASSIGN_OR_RETURN(std::unique_ptr<LLMEngine> engine, LLMEngine::create(config));
    Stopwatch vocabulary_timer;
    LMRUN_ASSIGN_OR_RETURN(structured::GrammarCompiler * engine_compiler, engine->grammar_compiler());
    const double vocabulary_ms = vocabulary_timer.elapsed_seconds() * 1e3;
    const auto vocabulary = engine_compiler->shared_vocabulary();
    std::cout << fmt::format(
        "structured output: vocabulary of {} tokens ({} text tokens) prepared in {:.0f} ms (once per "
        "engine)\n",
        vocabulary->vocab_size(), vocabulary->trie_tokens().size(), vocabulary_ms);

    const CompileTimes compile = measure_compile(vocabulary, options.repeats);
    for (size_t i = 0; i < compile.cold_ms.size(); ++i) {
        std::cout << fmt::format(
            "  compile schema {}: {:7.2f} ms cold, {:7.4f} ms cached   (target < 50 ms); with all {} states' "
            "masks "
            "{:7.1f} ms\n",
            i + 1, compile.cold_ms[i], compile.cached_ms[i], compile.num_states[i], compile.eager_ms[i]);
    }

    // The same prompts, seeds and (after the first run) lengths for every run.
    std::mt19937_64 rng(7);
    const int64_t vocab = engine->model_config().vocab_size;
    std::vector<std::vector<int32_t>> prompts(size_t(options.batch));
    for (auto& prompt : prompts) {
        prompt.resize(size_t(options.prompt_len));
        for (int32_t& id : prompt) id = int32_t(rng() % uint64_t(std::min<int64_t>(vocab, 150000)));
    }
    auto constrained_params = [&] {
        std::vector<SamplingParams> params(prompts.size());
        for (size_t i = 0; i < params.size(); ++i) {
            params[i].temperature = 1.0f;
            params[i].seed = 100 + i;
            params[i].max_tokens = options.max_tokens;
            params[i].structured_outputs = StructuredOutputsParams::json_schema(kDecodeSchema);
        }
        return params;
    };
    // Ratios per repeat, each against the unconstrained run of the same repeat; by wall
    // time and by the process's CPU time (which other processes on the machine do not inflate).
    std::vector<double> free_tps, cold_tps, warm_tps, cold_ratio, warm_ratio, warm_cpu_ratio, cold_cpu_ratio;
    std::vector<std::vector<int32_t>> first_outputs;
    const double load_before = load_average();
    for (int64_t r = 0; r < options.repeats; ++r) {
        // Cold: a grammar compiled afresh, every automaton state visited for the first time.
        LMRUN_ASSIGN_OR_RETURN(auto engine_cold, LLMEngine::create(config));
        LMRUN_ASSIGN_OR_RETURN(DecodeRun cold, run_batch(*engine_cold, prompts, constrained_params()));
        engine_cold.reset();
        // Warm: the same engine (and cached grammar) again.
        LMRUN_ASSIGN_OR_RETURN(DecodeRun warm_first, run_batch(*engine, prompts, constrained_params()));
        LMRUN_ASSIGN_OR_RETURN(DecodeRun warm, run_batch(*engine, prompts, constrained_params()));
        (void)warm_first;
        // Unconstrained, exactly as long.
        std::vector<SamplingParams> free_params(prompts.size());
        for (size_t i = 0; i < free_params.size(); ++i) {
            free_params[i].temperature = 1.0f;
            free_params[i].seed = 100 + i;
            free_params[i].ignore_eos = true;
            free_params[i].max_tokens = std::max<int64_t>(1, int64_t(warm.outputs[i].size()));
        }
        LMRUN_ASSIGN_OR_RETURN(DecodeRun free, run_batch(*engine, prompts, free_params));
        const double free_rate = double(free.tokens) / free.seconds;
        const double free_cpu_rate = double(free.tokens) / free.cpu_seconds;
        free_tps.push_back(free_rate);
        cold_tps.push_back(double(cold.tokens) / cold.seconds);
        warm_tps.push_back(double(warm.tokens) / warm.seconds);
        cold_ratio.push_back(cold_tps.back() / free_rate);
        warm_ratio.push_back(warm_tps.back() / free_rate);
        cold_cpu_ratio.push_back(double(cold.tokens) / cold.cpu_seconds / free_cpu_rate);
        warm_cpu_ratio.push_back(double(warm.tokens) / warm.cpu_seconds / free_cpu_rate);
        if (r == 0) first_outputs = cold.outputs;
    }
    const double load_after = load_average();
    const auto [cold_masks, warm_masks] = measure_masks(vocabulary, first_outputs);
    int64_t output_tokens = 0;
    for (const auto& output : first_outputs) output_tokens += int64_t(output.size());
    print_masks("cold grammar", cold_masks);
    print_masks("warm grammar", warm_masks);
    std::cout << fmt::format(
        "  decode batch {} ({:.1f} tokens per request on average): unconstrained {:.1f} tok/s, JSON schema "
        "{:.1f} "
        "tok/s warm ({:.1f}%; by CPU time {:.1f}%), {:.1f} tok/s cold ({:.1f}%; by CPU time {:.1f}%)   "
        "(target >= "
        "90%)\n",
        options.batch, double(output_tokens) / double(std::max<size_t>(1, first_outputs.size())),
        median(free_tps), median(warm_tps), 100 * median(warm_ratio), 100 * median(warm_cpu_ratio),
        median(cold_tps), 100 * median(cold_ratio), 100 * median(cold_cpu_ratio));
    std::cout << fmt::format("  load average {:.2f} before the decode runs, {:.2f} after\n", load_before,
                             load_after);
    return nlohmann::json{{"vocabulary_ms", vocabulary_ms},
                          {"compile_cold_ms", compile.cold_ms},
                          {"compile_cached_ms", compile.cached_ms},
                          {"compile_with_every_mask_ms", compile.eager_ms},
                          {"compile_num_states", compile.num_states},
                          {"masks_cold_grammar", mask_json(cold_masks)},
                          {"masks_warm_grammar", mask_json(warm_masks)},
                          {"decode_batch", options.batch},
                          {"unconstrained_tokens_per_s", median(free_tps)},
                          {"constrained_warm_tokens_per_s", median(warm_tps)},
                          {"constrained_cold_tokens_per_s", median(cold_tps)},
                          {"warm_ratio", median(warm_ratio)},
                          {"cold_ratio", median(cold_ratio)},
                          {"warm_cpu_ratio", median(warm_cpu_ratio)},
                          {"cold_cpu_ratio", median(cold_cpu_ratio)},
                          {"load_average_before", load_before},
                          {"load_average_after", load_after}};
}

}  // namespace lmrun::cli
