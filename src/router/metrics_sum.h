// Sums the Prometheus text of several workers into one, as if they were one server: the
// router's /metrics shows the workers' vLLM metrics (running and waiting requests, tokens,
// prefix-cache queries and hits, latency histograms) added up, so dashboards and clients
// written for one `lmrun serve` read a router the same way. Samples with the same name and
// labels are added (counters, histogram buckets, sums and counts, and gauges of counts add
// up); gauges that are fractions (names ending in "_perc") are averaged. Families keep the
// order they first appear in, each with its HELP and TYPE lines once, samples grouped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lmrun::router {

std::string sum_prometheus_texts(const std::vector<std::string>& texts);

}  // namespace lmrun::router
