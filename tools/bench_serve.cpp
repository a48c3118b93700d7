// bench_serve: a serving benchmark in the manner of `vllm bench serve`. Sends
// N streaming /v1/completions requests to a running server, either at a
// request rate (Poisson arrivals) or as fast as a fixed concurrency allows,
// with random token-id prompts of fixed lengths or prompts from a JSONL file,
// and reports request throughput, output tokens/s, and mean/median/p99 of time
// to first token (TTFT), time per output token (TPOT, after the first) and
// inter-token latency (ITL, between streamed chunks).
//
// --multi-turn SxUxT: a chat-like workload for routers and prefix caches: S system prompts
// (--system-prompt-len random ids each), U users per system prompt, T turns per user; each
// turn sends the whole history (system prompt, earlier turns with the replies the server
// gave, then --turn-input-len new ids), a user's turns one after another, --max-concurrency
// users at a time. Also reports the prefix-cache hit rate (from /metrics, before and after)
// and the requests and prompt tokens each worker served (X-Lmrun-Worker, behind lmrun router).
//
//   bench_serve --base-url http://127.0.0.1:8000 --num-prompts 200 --max-concurrency 16
//               --random-input-len 128 --random-output-len 128
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/timer.h"

namespace {

using Json = nlohmann::json;

struct BenchArgs {
    std::string base_url = "http://127.0.0.1:8000";
    std::string model;
    std::string api_key;
    int num_prompts = 100;
    double request_rate = INFINITY;  // requests/s; inf = all at once (bounded by max_concurrency)
    int max_concurrency = 0;         // 0 = unbounded
    int random_input_len = 128;
    int random_output_len = 128;
    int random_max_token_id = 500;  // random prompt ids are drawn from [3, this)
    std::string dataset;            // JSONL {"prompt": text | [ids], "max_tokens"?: n}
    uint64_t seed = 0;
    std::string json_output;
    std::string multi_turn;  // "SxUxT"
    int system_prompt_len = 256;
    int turn_input_len = 32;
};

struct BenchRequest {
    Json prompt;
    int64_t max_tokens = 0;
};

struct RequestResult {
    bool ok = false;
    std::string error;
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 0;
    double ttft = 0;
    double latency = 0;
    std::vector<double> itls;
    std::vector<int64_t> output_ids;
    std::string worker;  // X-Lmrun-Worker, when a router answered
};

std::vector<BenchRequest> random_requests(const BenchArgs& args) {
    std::mt19937_64 generator(args.seed);
    std::uniform_int_distribution<int> token(3, std::max(4, args.random_max_token_id) - 1);
    std::vector<BenchRequest> requests;
    for (int i = 0; i < args.num_prompts; ++i) {
        Json ids = Json::array();
        for (int t = 0; t < args.random_input_len; ++t) ids.push_back(token(generator));
        requests.push_back({std::move(ids), args.random_output_len});
    }
    return requests;
}

bool file_requests(const BenchArgs& args, std::vector<BenchRequest>& requests) {
    std::ifstream in(args.dataset);
    if (!in) return fmt::print(stderr, "{}: cannot open\n", args.dataset), false;
    std::string line;
    while (std::getline(in, line) && int(requests.size()) < args.num_prompts) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        Json record = Json::parse(line, nullptr, false);
        if (record.is_discarded() || !record.contains("prompt")) {
            return fmt::print(stderr, "{}: each line needs {{\"prompt\": ...}}\n", args.dataset), false;
        }
        requests.push_back({record["prompt"], record.value("max_tokens", int64_t(args.random_output_len))});
    }
    if (requests.empty()) return fmt::print(stderr, "{}: no prompts\n", args.dataset), false;
    return true;
}

// Feeds SSE bytes; calls on_data(json) per "data: {...}" event.
class SseParser {
  public:
    template <typename OnData>
    void feed(const char* data, size_t size, OnData on_data) {
        buffer_.append(data, size);
        size_t end;
        while ((end = buffer_.find("\n\n")) != std::string::npos) {
            std::string event = buffer_.substr(0, end);
            buffer_.erase(0, end + 2);
            if (event.rfind("data: ", 0) != 0) continue;
            std::string payload = event.substr(6);
            if (payload == "[DONE]") continue;
            Json json = Json::parse(payload, nullptr, false);
            if (!json.is_discarded()) on_data(json);
        }
    }

  private:
    std::string buffer_;
};

RequestResult run_request(const BenchArgs& args, const std::string& model, const BenchRequest& request) {
    httplib::Client client(args.base_url);
    client.set_read_timeout(600, 0);
    httplib::Headers headers;
    if (!args.api_key.empty()) headers.emplace("Authorization", "Bearer " + args.api_key);
    Json body = {{"model", model},
                 {"prompt", request.prompt},
                 {"max_tokens", request.max_tokens},
                 {"temperature", 0},
                 {"ignore_eos", true},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}},
                 {"return_token_ids", true}};
    RequestResult result;
    SseParser parser;
    const double start = lmrun::now_seconds();
    double last = 0;
    auto on_event = [&](const Json& event) {
        const double now = lmrun::now_seconds();
        if (event.contains("error")) result.error = event["error"].dump();
        if (event.contains("usage") && event["usage"].is_object()) {
            result.prompt_tokens = event["usage"].value("prompt_tokens", int64_t(0));
            result.output_tokens = event["usage"].value("completion_tokens", int64_t(0));
        }
        if (!event.contains("choices") || event["choices"].empty()) return;
        // A token counts when it arrives, even if it adds no text (no tokenizer, or half a character).
        const Json& choice = event["choices"][0];
        bool has_tokens =
            choice.contains("token_ids") && choice["token_ids"].is_array() && !choice["token_ids"].empty();
        if (has_tokens)
            for (const Json& id : choice["token_ids"]) result.output_ids.push_back(id.get<int64_t>());
        if (choice.value("text", std::string()).empty() && !has_tokens) return;
        if (last == 0)
            result.ttft = now - start;
        else
            result.itls.push_back(now - last);
        last = now;
    };
    httplib::Request http_request;
    http_request.method = "POST";
    http_request.path = "/v1/completions";
    http_request.headers = headers;
    http_request.set_header("Content-Type", "application/json");
    http_request.body = body.dump();
    http_request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
        parser.feed(data, size, on_event);
        return true;
    };
    auto response = client.send(http_request);
    if (!response) {
        result.error = "connection failed: " + httplib::to_string(response.error());
        return result;
    }
    if (response->status != 200) {
        result.error = fmt::format("HTTP {}", response->status);
        return result;
    }
    result.latency = lmrun::now_seconds() - start;
    result.worker = response->get_header_value("X-Lmrun-Worker");
    result.ok = result.error.empty() && result.output_tokens > 0;
    return result;
}

struct Summary {
    double mean = 0, median = 0, p99 = 0;
};

Summary summarize(std::vector<double> values) {
    Summary summary;
    if (values.empty()) return summary;
    std::sort(values.begin(), values.end());
    double total = 0;
    for (double value : values) total += value;
    summary.mean = total / double(values.size());
    const size_t n = values.size();
    summary.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    // Linear interpolation between closest ranks, as numpy.percentile does.
    const double rank = 0.99 * double(n - 1);
    const size_t below = size_t(rank);
    const size_t above = std::min(below + 1, n - 1);
    summary.p99 = values[below] + (values[above] - values[below]) * (rank - double(below));
    return summary;
}

// Arrival offsets in seconds: Poisson process at `rate`, or all at 0.
std::vector<double> arrival_times(int count, double rate, uint64_t seed) {
    std::vector<double> times(size_t(count), 0.0);
    if (!std::isfinite(rate) || rate <= 0) return times;
    std::mt19937_64 generator(seed + 1);
    std::exponential_distribution<double> gap(rate);
    double t = 0;
    for (double& time : times) {
        time = t;
        t += gap(generator);
    }
    return times;
}

std::vector<RequestResult> run_all(const BenchArgs& args, const std::string& model,
                                   const std::vector<BenchRequest>& requests, double& duration) {
    std::vector<RequestResult> results(requests.size());
    const std::vector<double> arrivals = arrival_times(int(requests.size()), args.request_rate, args.seed);
    int num_workers = args.max_concurrency > 0 ? args.max_concurrency : int(requests.size());
    num_workers = std::clamp(num_workers, 1, 1024);
    std::atomic<size_t> next{0};
    const double start = lmrun::now_seconds();
    std::vector<std::thread> workers;
    for (int w = 0; w < num_workers; ++w) {
        workers.emplace_back([&] {
            for (size_t i = next++; i < requests.size(); i = next++) {
                const double wait = start + arrivals[i] - lmrun::now_seconds();
                if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
                results[i] = run_request(args, model, requests[i]);
            }
        });
    }
    for (std::thread& worker : workers) worker.join();
    duration = lmrun::now_seconds() - start;
    return results;
}

struct MultiTurnShape {
    int systems = 0, users = 0, turns = 0;
};

bool parse_multi_turn(const std::string& text, MultiTurnShape& shape) {
    char tail = 0;
    return std::sscanf(text.c_str(), "%dx%dx%d%c", &shape.systems, &shape.users, &shape.turns, &tail) == 3 &&
           shape.systems > 0 && shape.users > 0 && shape.turns > 0;
}

Json random_ids(std::mt19937_64& generator, int count, int max_token_id) {
    std::uniform_int_distribution<int> token(3, std::max(4, max_token_id) - 1);
    Json ids = Json::array();
    for (int i = 0; i < count; ++i) ids.push_back(token(generator));
    return ids;
}

// Conversation c has system prompt c % systems; its turns run in order, each on the last's history.
std::vector<RequestResult> run_multi_turn(const BenchArgs& args, const MultiTurnShape& shape,
                                          const std::string& model, double& duration) {
    const int conversations = shape.systems * shape.users;
    std::vector<Json> systems;
    for (int s = 0; s < shape.systems; ++s) {
        std::mt19937_64 generator(args.seed * 7919 + uint64_t(s));
        systems.push_back(random_ids(generator, args.system_prompt_len, args.random_max_token_id));
    }
    std::vector<RequestResult> results(size_t(conversations * shape.turns));
    std::atomic<int> next{0};
    int num_workers = args.max_concurrency > 0 ? args.max_concurrency : conversations;
    num_workers = std::clamp(num_workers, 1, 1024);
    const double start = lmrun::now_seconds();
    std::vector<std::thread> workers;
    for (int w = 0; w < num_workers; ++w) {
        workers.emplace_back([&] {
            for (int c = next++; c < conversations; c = next++) {
                std::mt19937_64 generator(args.seed * 104729 + uint64_t(c) + 1);
                Json history = systems[size_t(c % shape.systems)];
                for (int t = 0; t < shape.turns; ++t) {
                    for (const Json& id :
                         random_ids(generator, args.turn_input_len, args.random_max_token_id))
                        history.push_back(id);
                    RequestResult& result = results[size_t(c * shape.turns + t)];
                    result = run_request(args, model, {history, args.random_output_len});
                    if (!result.ok) break;
                    for (int64_t id : result.output_ids) history.push_back(id);
                }
            }
        });
    }
    for (std::thread& worker : workers) worker.join();
    duration = lmrun::now_seconds() - start;
    return results;
}

// The sum of every sample of `name` (all label sets) in the server's /metrics; -1 if none.
double scrape_total(const BenchArgs& args, const std::string& name) {
    httplib::Client client(args.base_url);
    auto response = client.Get("/metrics");
    if (!response || response->status != 200) return -1;
    double total = -1;
    std::istringstream lines(response->body);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(name, 0) != 0 ||
            (line.size() > name.size() && line[name.size()] != '{' && line[name.size()] != ' '))
            continue;
        total = std::max(total, 0.0) + std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    }
    return total;
}

// Requests and prompt tokens per worker, and how far the busiest is above the mean.
Json worker_shares(const std::vector<RequestResult>& results) {
    std::map<std::string, std::pair<int64_t, int64_t>> shares;
    for (const RequestResult& result : results)
        if (result.ok && !result.worker.empty()) {
            shares[result.worker].first += 1;
            shares[result.worker].second += result.prompt_tokens;
        }
    Json json = Json::object();
    int64_t total = 0, most = 0;
    for (const auto& [worker, share] : shares) {
        json[worker] = {{"requests", share.first}, {"prompt_tokens", share.second}};
        total += share.second;
        most = std::max(most, share.second);
    }
    if (!shares.empty() && total > 0)
        json["max_over_mean_prompt_tokens"] = double(most) * double(shares.size()) / double(total);
    return json;
}

Json report(const BenchArgs& args, const std::vector<RequestResult>& results, double duration) {
    int64_t num_ok = 0, input_tokens = 0, output_tokens = 0;
    std::vector<double> ttfts, tpots, itls;
    for (const RequestResult& result : results) {
        if (!result.ok) continue;
        ++num_ok;
        input_tokens += result.prompt_tokens;
        output_tokens += result.output_tokens;
        ttfts.push_back(result.ttft * 1e3);
        if (result.output_tokens > 1) {
            tpots.push_back((result.latency - result.ttft) * 1e3 / double(result.output_tokens - 1));
        }
        for (double itl : result.itls) itls.push_back(itl * 1e3);
    }
    const Summary ttft = summarize(ttfts), tpot = summarize(tpots), itl = summarize(itls);
    Json json = {{"num_prompts", results.size()},
                 {"completed", num_ok},
                 {"failed", int64_t(results.size()) - num_ok},
                 {"max_concurrency", args.max_concurrency},
                 {"request_rate", std::isfinite(args.request_rate) ? Json(args.request_rate) : Json("inf")},
                 {"duration_s", duration},
                 {"total_input_tokens", input_tokens},
                 {"total_output_tokens", output_tokens},
                 {"request_throughput", double(num_ok) / duration},
                 {"output_throughput", double(output_tokens) / duration},
                 {"total_token_throughput", double(input_tokens + output_tokens) / duration}};
    for (auto [name, summary] : {std::pair{"ttft_ms", ttft}, {"tpot_ms", tpot}, {"itl_ms", itl}}) {
        json[std::string("mean_") + name] = summary.mean;
        json[std::string("median_") + name] = summary.median;
        json[std::string("p99_") + name] = summary.p99;
    }
    return json;
}

void print_report(const Json& json) {
    auto row = [](const char* label, const auto& value) { fmt::print("{:<40}{:>12}\n", label, value); };
    auto row2 = [](const char* label, double value) { fmt::print("{:<40}{:>12.2f}\n", label, value); };
    fmt::print("{:=^52}\n", " Serving Benchmark Result ");
    row("Successful requests:", json["completed"].get<int64_t>());
    row("Failed requests:", json["failed"].get<int64_t>());
    row("Maximum request concurrency:", json["max_concurrency"].get<int64_t>());
    row2("Benchmark duration (s):", json["duration_s"]);
    row("Total input tokens:", json["total_input_tokens"].get<int64_t>());
    row("Total generated tokens:", json["total_output_tokens"].get<int64_t>());
    row2("Request throughput (req/s):", json["request_throughput"]);
    row2("Output token throughput (tok/s):", json["output_throughput"]);
    row2("Total token throughput (tok/s):", json["total_token_throughput"]);
    struct Section {
        const char* title;
        const char* key;
        const char* label;
    };
    const Section sections[] = {{"Time to First Token", "ttft", "TTFT"},
                                {"Time per Output Token (excl. 1st token)", "tpot", "TPOT"},
                                {"Inter-token Latency", "itl", "ITL"}};
    for (const Section& section : sections) {
        fmt::print("{:-^52}\n", std::string(" ") + section.title + " ");
        for (const char* stat : {"mean", "median", "p99"}) {
            std::string label = fmt::format("{} {} (ms):", stat, section.label);
            label[0] = char(std::toupper(label[0]));
            row2(label.c_str(), json[fmt::format("{}_{}_ms", stat, section.key)]);
        }
    }
    fmt::print("{:=^52}\n", "");
}

// The served model's name, from GET /v1/models.
std::string first_model(const BenchArgs& args) {
    httplib::Client client(args.base_url);
    httplib::Headers headers;
    if (!args.api_key.empty()) headers.emplace("Authorization", "Bearer " + args.api_key);
    auto response = client.Get("/v1/models", headers);
    if (!response || response->status != 200) return {};
    Json json = Json::parse(response->body, nullptr, false);
    if (json.is_discarded() || !json.contains("data") || json["data"].empty()) return {};
    return json["data"][0].value("id", std::string());
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_serve: benchmark a running lmrun (or any OpenAI-compatible) server"};
    BenchArgs args;
    app.add_option("--base-url", args.base_url, "Server URL")->capture_default_str();
    app.add_option("--model", args.model, "Model name (default: the first of /v1/models)");
    app.add_option("--api-key", args.api_key, "Bearer token");
    app.add_option("--num-prompts", args.num_prompts, "Requests to send")->capture_default_str();
    app.add_option("--request-rate", args.request_rate,
                   "Requests per second, Poisson arrivals (default: inf)");
    app.add_option("--max-concurrency", args.max_concurrency, "Requests in flight at most (0 = unbounded)");
    app.add_option("--random-input-len", args.random_input_len, "Prompt tokens per random request")
        ->capture_default_str();
    app.add_option("--random-output-len", args.random_output_len, "Output tokens per request")
        ->capture_default_str();
    app.add_option("--random-max-token-id", args.random_max_token_id, "Random prompt ids are < this")
        ->capture_default_str();
    app.add_option("--dataset", args.dataset, "JSONL prompts {\"prompt\": text or ids, \"max_tokens\"?: n}");
    app.add_option("--seed", args.seed, "Seed of the random prompts and arrivals");
    app.add_option("--json-output", args.json_output, "Also write the results as JSON here");
    app.add_option("--multi-turn", args.multi_turn,
                   "SxUxT: S system prompts x U users x T turns, each turn resending the history");
    app.add_option("--system-prompt-len", args.system_prompt_len, "--multi-turn: ids per system prompt")
        ->capture_default_str();
    app.add_option("--turn-input-len", args.turn_input_len, "--multi-turn: new ids per user turn")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    MultiTurnShape shape;
    if (!args.multi_turn.empty() && !parse_multi_turn(args.multi_turn, shape))
        return fmt::print(stderr, "--multi-turn must be SxUxT with positive numbers, e.g. 8x32x4\n"), 2;
    if (args.num_prompts < 1 || args.random_input_len < 1 || args.random_output_len < 1) {
        return fmt::print(stderr, "--num-prompts, --random-input-len and --random-output-len must be >= 1\n"),
               2;
    }
    std::string model = args.model.empty() ? first_model(args) : args.model;
    if (model.empty()) return fmt::print(stderr, "{}: no model found at /v1/models\n", args.base_url), 1;
    if (shape.turns > 0) {
        fmt::print("model {}: {} conversations x {} turns, concurrency {}\n", model,
                   shape.systems * shape.users, shape.turns, args.max_concurrency);
        const double hits = scrape_total(args, "vllm:prefix_cache_hits_total");
        const double queries = scrape_total(args, "vllm:prefix_cache_queries_total");
        double duration = 0;
        std::vector<RequestResult> results = run_multi_turn(args, shape, model, duration);
        Json json = report(args, results, duration);
        const double queried = scrape_total(args, "vllm:prefix_cache_queries_total") - queries;
        json["prefix_cache_hit_rate"] =
            queried > 0 ? (scrape_total(args, "vllm:prefix_cache_hits_total") - hits) / queried : 0.0;
        json["workers"] = worker_shares(results);
        print_report(json);
        fmt::print("Prefix cache hit rate: {:.3f}\nWorkers: {}\n",
                   json["prefix_cache_hit_rate"].get<double>(), json["workers"].dump());
        if (!args.json_output.empty()) std::ofstream(args.json_output) << json.dump(2) << "\n";
        return json["failed"].get<int64_t>() == 0 ? 0 : 1;
    }
    std::vector<BenchRequest> requests;
    if (args.dataset.empty())
        requests = random_requests(args);
    else if (!file_requests(args, requests))
        return 2;
    fmt::print("model {}: {} requests, concurrency {}, rate {}\n", model, requests.size(),
               args.max_concurrency > 0 ? std::to_string(args.max_concurrency) : "unbounded",
               args.request_rate);
    double duration = 0;
    std::vector<RequestResult> results = run_all(args, model, requests, duration);
    for (const RequestResult& result : results) {
        if (!result.ok) {
            fmt::print(stderr, "first failure: {}\n", result.error.empty() ? "no tokens" : result.error);
            break;
        }
    }
    Json json = report(args, results, duration);
    print_report(json);
    if (!args.json_output.empty()) std::ofstream(args.json_output) << json.dump(2) << "\n";
    return json["failed"].get<int64_t>() == 0 ? 0 : 1;
}
