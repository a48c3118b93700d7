#include "cli/bench_report.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

namespace lmrun::cli {
namespace {

std::string format_row(const BenchRow& row) {
    std::string roof = row.roofline_tokens_per_s > 0 ? fmt::format("{:.1f}", row.roofline_tokens_per_s) : "";
    std::string percent = row.roofline_tokens_per_s > 0
                              ? fmt::format("{:.0f}%", 100 * row.tokens_per_s / row.roofline_tokens_per_s)
                              : "";
    std::string target = row.has_target ? fmt::format("{} ({})", row.target, row.met ? "met" : "MISSED") : "";
    return fmt::format("{:<30} {:>10.1f} {:>10.2f} {:>10} {:>7}   {}\n", row.name, row.tokens_per_s, row.ms,
                       roof, percent, target);
}

}  // namespace

BenchRow make_bench_row(std::string name, double tokens_per_s, double ms) {
    BenchRow row;
    row.name = std::move(name);
    row.tokens_per_s = tokens_per_s;
    row.ms = ms;
    return row;
}

void BenchReport::print_header() const {
    std::cout << fmt::format("{:<30} {:>10} {:>10} {:>10} {:>7}   {}\n", "workload", "tokens/s", "ms/step",
                             "roofline", "% roof", "target");
}

void BenchReport::add(BenchRow row) {
    std::cout << format_row(row) << std::flush;
    rows_.push_back(std::move(row));
}

nlohmann::json BenchReport::to_json() const {
    nlohmann::json list = nlohmann::json::array();
    for (const BenchRow& row : rows_) {
        nlohmann::json entry = {
            {"workload", row.name}, {"tokens_per_s", row.tokens_per_s}, {"ms_per_step", row.ms}};
        if (row.roofline_tokens_per_s > 0) {
            entry["roofline_tokens_per_s"] = row.roofline_tokens_per_s;
            entry["fraction_of_roofline"] = row.tokens_per_s / row.roofline_tokens_per_s;
        }
        if (row.has_target) entry["target"] = row.target, entry["target_met"] = row.met;
        list.push_back(entry);
    }
    return list;
}

void BenchReport::print_profile() const {
    std::vector<const BenchRow*> profiled;
    for (const BenchRow& row : rows_) {
        double total = 0;
        for (double s : row.op_seconds) total += s;
        if (total > 0) profiled.push_back(&row);
    }
    if (profiled.empty()) return;
    std::cout << "\nper-op time, ms per step (share of the step)\n" << fmt::format("{:<22}", "op");
    for (const BenchRow* row : profiled) std::cout << fmt::format(" {:>22}", row->name);
    std::cout << "\n";
    for (size_t op = 0; op < size_t(Op::kCount); ++op) {
        bool any = std::any_of(profiled.begin(), profiled.end(),
                               [&](const BenchRow* r) { return r->op_seconds[op] > 0; });
        if (!any) continue;
        std::cout << fmt::format("{:<22}", op_name(Op(op)));
        for (const BenchRow* row : profiled) {
            std::cout << fmt::format(" {:>13.2f} ({:>4.1f}%)", row->op_seconds[op] * 1e3,
                                     100 * row->op_seconds[op] / (row->ms * 1e-3));
        }
        std::cout << "\n";
    }
}

}  // namespace lmrun::cli
