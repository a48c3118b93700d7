// tokenizer.json "post_processor" for single sequences: the special-token ids put
// before and after the encoded text when encode(..., add_special_tokens=true).
// Supported: TemplateProcessing (the "single" template), BertProcessing,
// RobertaProcessing, ByteLevel (adds nothing), Sequence of these.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace lmrun {

class PostProcessor {
  public:
    // `spec` may be null.
    static Result<PostProcessor> from_json(const nlohmann::json& spec);
    // Whether the file defines a processor that adds tokens (else the caller may
    // fall back to tokenizer_config's add_bos_token / add_eos_token).
    bool adds_tokens() const { return !prefix_ids_.empty() || !suffix_ids_.empty(); }
    bool is_defined() const { return defined_; }
    void apply(std::vector<int32_t>& ids) const;

    const std::vector<int32_t>& prefix_ids() const { return prefix_ids_; }
    const std::vector<int32_t>& suffix_ids() const { return suffix_ids_; }
    void set_ids(std::vector<int32_t> prefix_ids, std::vector<int32_t> suffix_ids);

  private:
    Status append(const nlohmann::json& spec);
    Status append_template(const nlohmann::json& spec);

    std::vector<int32_t> prefix_ids_;
    std::vector<int32_t> suffix_ids_;
    bool defined_ = false;
};

}  // namespace lmrun
