#include "cli/bench_plot.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

namespace lmrun::cli {
namespace {

constexpr double kWidth = 640, kHeight = 400, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

std::string polyline(const std::vector<std::pair<double, double>>& xy, const char* color, bool dashed) {
    std::string points;
    for (auto [x, y] : xy) points += fmt::format("{:.1f},{:.1f} ", x, y);
    return fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n", color,
                       dashed ? " stroke-dasharray=\"6,4\"" : "", points);
}

}  // namespace

std::string throughput_svg(const std::vector<PlotPoint>& points, const std::string& title) {
    double max_batch = 1, max_rate = 1;
    for (const PlotPoint& p : points) {
        max_batch = std::max(max_batch, p.batch);
        max_rate = std::max({max_rate, p.tokens_per_s, p.roofline_tokens_per_s});
    }
    max_rate *= 1.1;
    // Batch sizes grow geometrically: log2 x axis.
    const double log_max = std::max(1.0, std::log2(max_batch));
    auto x_of = [&](double batch) { return kLeft + (kWidth - kLeft - kRight) * std::log2(batch) / log_max; };
    auto y_of = [&](double rate) { return kHeight - kBottom - (kHeight - kTop - kBottom) * rate / max_rate; };
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
        "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{}\" y=\"24\" font-size=\"15\">{}</text>\n",
        kWidth, kHeight, kLeft, title);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", kLeft,
                       kHeight - kBottom, kWidth - kRight);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", kLeft, kTop,
                       kHeight - kBottom);
    for (const PlotPoint& p : points) {
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x_of(p.batch),
                           kHeight - kBottom + 18, p.batch);
    }
    for (int i = 0; i <= 4; ++i) {
        double rate = max_rate * i / 4;
        svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.0f}</text>\n", kLeft - 6,
                           y_of(rate) + 4, rate);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">decode batch size</text>\n",
                       (kWidth + kLeft) / 2, kHeight - 10);
    svg += fmt::format(
        "<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">"
        "generated tokens/s</text>\n",
        (kHeight) / 2, kHeight / 2);
    std::vector<std::pair<double, double>> measured, roofline;
    for (const PlotPoint& p : points) {
        measured.emplace_back(x_of(p.batch), y_of(p.tokens_per_s));
        roofline.emplace_back(x_of(p.batch), y_of(p.roofline_tokens_per_s));
    }
    svg += polyline(roofline, "#999999", true);
    svg += polyline(measured, "#1f77b4", false);
    for (auto [x, y] : measured)
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#1f77b4\"/>\n", x, y);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#1f77b4\">measured</text>\n", kLeft + 10, kTop + 10);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#999999\">roofline (in-run limits)</text>\n",
                       kLeft + 10, kTop + 26);
    svg += "</svg>\n";
    return svg;
}

Status write_throughput_svg(const std::string& path, const std::vector<PlotPoint>& points,
                            const std::string& title) {
    std::ofstream out(path);
    if (!out) return make_error("{}: cannot write the plot", path);
    out << throughput_svg(points, title);
    if (!out) return make_error("{}: write failed", path);
    return ok_status();
}

}  // namespace lmrun::cli
