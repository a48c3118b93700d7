// `lmrun bench --plot out.svg`: decode throughput against batch size, with the roofline the
// same run measured, as a dependency-free SVG.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace lmrun::cli {

struct PlotPoint {
    double batch = 0;
    double tokens_per_s = 0;
    double roofline_tokens_per_s = 0;
};

std::string throughput_svg(const std::vector<PlotPoint>& points, const std::string& title);
Status write_throughput_svg(const std::string& path, const std::vector<PlotPoint>& points,
                            const std::string& title);

}  // namespace lmrun::cli
