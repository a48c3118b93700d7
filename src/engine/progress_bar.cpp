#include "engine/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "core/timer.h"

namespace lmrun {

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      is_terminal_(isatty(STDERR_FILENO)),
      start_time_(now_seconds()) {}

void ProgressBar::update(int64_t done, int64_t prompt_tokens, int64_t generation_tokens) {
    done_ = done;
    prompt_tokens_ = prompt_tokens;
    generation_tokens_ = generation_tokens;
    double now = now_seconds();
    if (enabled_ && is_terminal_ && now - last_draw_time_ > 0.1) {
        last_draw_time_ = now;
        draw(false);
    }
}

void ProgressBar::finish() {
    if (enabled_) draw(true);
}

namespace {
std::string clock_text(double seconds) {
    int64_t total = std::llround(seconds);
    return fmt::format("{:02}:{:02}", total / 60, total % 60);
}
}  // namespace

void ProgressBar::draw(bool final_line) {
    const double elapsed = now_seconds() - start_time_;
    const double fraction = total_ > 0 ? double(done_) / double(total_) : 1.0;
    constexpr int kWidth = 30;
    int filled = int(fraction * kWidth);
    std::string bar(size_t(filled), '#');
    bar.append(size_t(kWidth - filled), ' ');
    double remaining = done_ > 0 ? elapsed / double(done_) * double(total_ - done_) : 0;
    double safe_elapsed = elapsed > 1e-9 ? elapsed : 1e-9;
    std::string line =
        fmt::format("{}: {:3.0f}%|{}| {}/{} [{}<{}, input: {:.1f} toks/s, output: {:.1f} toks/s]", label_,
                    fraction * 100, bar, done_, total_, clock_text(elapsed), clock_text(remaining),
                    double(prompt_tokens_) / safe_elapsed, double(generation_tokens_) / safe_elapsed);
    std::fprintf(stderr, "%s%s%s", is_terminal_ ? "\r" : "", line.c_str(), final_line ? "\n" : "");
    std::fflush(stderr);
}

}  // namespace lmrun
