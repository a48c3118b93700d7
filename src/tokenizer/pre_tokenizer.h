// tokenizer.json "pre_tokenizer": splits normalized text into pieces that the
// model encodes independently (BPE never merges across pieces). Supported
// types: Sequence, Split (all five behaviours, invert), ByteLevel (prefix space,
// optional GPT-2 regex; maps every byte to the byte-level alphabet), Metaspace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "tokenizer/pattern.h"

namespace lmrun {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class PreTokenizer {
  public:
    // `spec` may be null: the whole text is one piece.
    static Result<PreTokenizer> from_json(const nlohmann::json& spec);
    // `at_input_start`: the text begins the original input (no added token before
    // it), which Metaspace's prepend_scheme "first" needs.
    std::vector<std::string> pre_tokenize(std::string_view text, bool at_input_start = true) const;

  private:
    enum class Kind { Split, ByteLevel, Metaspace };
    enum class PrependScheme { Always, First, Never };
    struct Step {
        Kind kind = Kind::Split;
        Pattern pattern = Pattern::literal("");
        SplitBehavior behavior = SplitBehavior::Isolated;
        bool invert = false;
        bool add_prefix_space = false;
        bool use_regex = false;
        std::string replacement;  // Metaspace
        PrependScheme prepend_scheme = PrependScheme::Always;
        bool split = true;
    };
    // One step of the section (not a Sequence: component_steps.h flattens those).
    static Result<Step> read_step(const std::string& type, const nlohmann::json& spec);
    static void apply(const Step& step, std::string_view piece, bool at_input_start,
                      std::vector<std::string>& out);
    static Result<Step> parse_metaspace(const nlohmann::json& spec);

    std::vector<Step> steps_;
};

// Splits `text` at the matches of `pattern` according to `behavior` (HF semantics).
std::vector<std::string> split_text(std::string_view text, const Pattern& pattern, SplitBehavior behavior,
                                    bool invert);

}  // namespace lmrun
