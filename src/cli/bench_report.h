// The table `lmrun bench` prints as it goes: one row per workload with its throughput, the
// roofline the in-run limits put on it and the project's target, then (--profile) where each
// workload's step time went, per op; and the same rows as JSON (--json).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench_workloads.h"

namespace lmrun::cli {

struct BenchRow {
    std::string name;
    double tokens_per_s = 0;
    double ms = 0;
    double roofline_tokens_per_s = 0;  // 0: none for this workload
    std::string target;
    bool has_target = false;
    bool met = false;
    OpSeconds op_seconds{};
};

BenchRow make_bench_row(std::string name, double tokens_per_s, double ms);

class BenchReport {
  public:
    void print_header() const;
    // Prints the row at once (long runs show progress) and keeps it for the profile and JSON.
    void add(BenchRow row);
    const std::vector<BenchRow>& rows() const { return rows_; }
    nlohmann::json to_json() const;
    // Per-op milliseconds and shares of the rows measured with the op profiler on; nothing
    // when none was.
    void print_profile() const;

  private:
    std::vector<BenchRow> rows_;
};

}  // namespace lmrun::cli
