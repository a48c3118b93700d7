// A one-line progress bar on stderr, like vLLM's "Processed prompts" bar:
// requests done, elapsed/remaining time, prompt and generation tokens/s.
// Redraws at most ~10 times a second; prints nothing when stderr is not a
// terminal except the final line.
#pragma once

#include <cstdint>
#include <string>

namespace lmrun {

class ProgressBar {
  public:
    ProgressBar(std::string label, int64_t total, bool enabled = true);
    void update(int64_t done, int64_t prompt_tokens, int64_t generation_tokens);
    void finish();

  private:
    void draw(bool final_line);

    std::string label_;
    int64_t total_;
    bool enabled_;
    bool is_terminal_;
    double start_time_;
    double last_draw_time_ = 0;
    int64_t done_ = 0, prompt_tokens_ = 0, generation_tokens_ = 0;
};

}  // namespace lmrun
