#include "tokenizer/tokenizer_json.h"

#include "core/mmap_file.h"

namespace lmrun {

namespace {

using Json = nlohmann::json;

// Forwards every event to a DOM builder except those inside model.vocab and
// model.merges, which it collects into BpeTables.
class TokenizerSax {
  public:
    TokenizerSax(TokenizerJson& out, int max_depth)
        : out_(out), dom_(out.spec, /*allow_exceptions=*/false), max_depth_(max_depth) {}

    bool too_deep() const { return too_deep_; }

    bool null() { return capture_ == Capture::None ? dom_.null() : fail("unexpected null"); }
    bool boolean(bool value) {
        return capture_ == Capture::None ? dom_.boolean(value) : fail("unexpected bool");
    }
    bool number_integer(Json::number_integer_t value) {
        return capture_ == Capture::None ? dom_.number_integer(value) : vocab_id(value);
    }
    bool number_unsigned(Json::number_unsigned_t value) {
        if (capture_ == Capture::None) return dom_.number_unsigned(value);
        return value > INT64_MAX ? fail("vocab id out of range") : vocab_id(static_cast<int64_t>(value));
    }
    bool number_float(Json::number_float_t value, const Json::string_t& text) {
        return capture_ == Capture::None ? dom_.number_float(value, text) : fail("non-integer vocab id");
    }
    bool string(Json::string_t& value);
    bool binary(Json::binary_t& value) { return dom_.binary(value); }
    bool key(Json::string_t& value);
    bool start_object(std::size_t size);
    bool end_object();
    bool start_array(std::size_t size);
    bool end_array();
    bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
        return dom_.parse_error(position, token, e);
    }

  private:
    enum class Capture { None, Vocab, Merges, MergePair };
    bool at_model_key(const char* name) const {
        // keys_ has one entry per enclosing object level that has seen a key.
        return depth_ == 2 && keys_.size() == 2 && keys_[0] == "model" && keys_[1] == name;
    }
    bool fail(const std::string& what) {
        if (out_.tables.error.empty() && skip_depth_ == 0) out_.tables.error = what;
        return true;  // keep parsing: the error is reported after the parse
    }
    // A container where a captured section expects a scalar: record the error
    // and skip everything up to its end.
    bool skip_container() {
        fail("unexpected object or array inside model.vocab or model.merges");
        ++skip_depth_;
        return true;
    }
    bool vocab_id(int64_t id) {
        if (skip_depth_ > 0) return true;
        if (capture_ != Capture::Vocab) return fail("model.merges: unexpected number");
        out_.tables.vocab.emplace_back(std::move(pending_key_), id);
        return true;
    }

    TokenizerJson& out_;
    nlohmann::detail::json_sax_dom_parser<Json> dom_;
    Capture capture_ = Capture::None;
    size_t depth_ = 0;               // open containers outside captured sections
    std::vector<std::string> keys_;  // last key at each object depth
    std::string pending_key_;
    std::vector<std::string> pair_;
    size_t skip_depth_ = 0;  // > 0 inside a skipped malformed container
    // Every open container, captured or not: the parse stops past max_depth_, before the
    // DOM (and the recursive code that later walks it) could get that deep.
    int nesting_ = 0;
    int max_depth_;
    bool too_deep_ = false;

    bool enter() {
        if (++nesting_ <= max_depth_) return true;
        too_deep_ = true;
        return false;
    }
};

bool TokenizerSax::string(Json::string_t& value) {
    if (skip_depth_ > 0) return true;
    switch (capture_) {
        case Capture::None:
            return dom_.string(value);
        case Capture::Vocab:
            return fail("model.vocab: unexpected string id");
        case Capture::Merges: {
            std::pair<std::string, std::string> merge;
            if (!split_merge_line(value, merge)) {
                return fail("model.merges[" + std::to_string(out_.tables.merges.size()) + "]: '" + value +
                            "' is not two tokens separated by a space");
            }
            out_.tables.merges.push_back(std::move(merge));
            return true;
        }
        case Capture::MergePair:
            pair_.push_back(std::move(value));
            return true;
    }
    return true;
}

bool TokenizerSax::key(Json::string_t& value) {
    if (skip_depth_ > 0) return true;
    if (capture_ == Capture::Vocab) {
        pending_key_ = std::move(value);
        return true;
    }
    if (capture_ != Capture::None) return fail("model.merges: unexpected key");
    keys_.resize(depth_);
    if (depth_ > 0) keys_[depth_ - 1] = value;
    return dom_.key(value);
}

bool TokenizerSax::start_object(std::size_t size) {
    if (!enter()) return false;
    if (skip_depth_ > 0 || capture_ != Capture::None) return skip_container();
    if (at_model_key("vocab")) {
        capture_ = Capture::Vocab;
        out_.has_tables = true;
        return true;
    }
    ++depth_;
    return dom_.start_object(size);
}

bool TokenizerSax::end_object() {
    --nesting_;
    if (skip_depth_ > 0) {
        --skip_depth_;
        return true;
    }
    if (capture_ == Capture::Vocab) {
        capture_ = Capture::None;
        return dom_.null();
    }
    --depth_;
    return dom_.end_object();
}

bool TokenizerSax::start_array(std::size_t size) {
    if (!enter()) return false;
    if (skip_depth_ > 0) return skip_container();
    if (capture_ == Capture::Merges) {
        capture_ = Capture::MergePair;
        pair_.clear();
        return true;
    }
    if (capture_ != Capture::None) return skip_container();
    if (at_model_key("merges")) {
        capture_ = Capture::Merges;
        out_.tables.merges.reserve(size == std::size_t(-1) ? 0 : size);
        return true;
    }
    ++depth_;
    return dom_.start_array(size);
}

bool TokenizerSax::end_array() {
    --nesting_;
    if (skip_depth_ > 0) {
        --skip_depth_;
        return true;
    }
    if (capture_ == Capture::MergePair) {
        capture_ = Capture::Merges;
        if (pair_.size() != 2) {
            return fail("model.merges[" + std::to_string(out_.tables.merges.size()) + "] is not a pair");
        }
        out_.tables.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
        return true;
    }
    if (capture_ == Capture::Merges) {
        capture_ = Capture::None;
        return dom_.null();
    }
    --depth_;
    return dom_.end_array();
}

}  // namespace

Result<TokenizerJson> parse_tokenizer_json(std::string_view text, const std::string& source,
                                           const JsonLimits& limits) {
    if (text.size() > limits.max_bytes)
        return with_subject(
            make_error(ErrorKind::ResourceExhausted, "{}: {} bytes, more than the limit of {}", source,
                       text.size(), limits.max_bytes),
            source);
    TokenizerJson out;
    TokenizerSax sax(out, limits.max_depth);
    const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json,
                                    /*strict=*/true);
    if (sax.too_deep())
        return with_subject(make_error(ErrorKind::ResourceExhausted, "{}: JSON nested deeper than {} levels",
                                       source, limits.max_depth),
                            source);
    if (!ok || out.spec.is_discarded())
        return with_subject(make_error(ErrorKind::Corrupt, "{}: malformed JSON", source), source);
    return out;
}

Result<TokenizerJson> read_tokenizer_json(const std::string& path, const JsonLimits& limits) {
    LMRUN_ASSIGN_OR_RETURN(std::shared_ptr<MmapFile> file, MmapFile::open(path));
    const auto* begin = reinterpret_cast<const char*>(file->data());
    return parse_tokenizer_json(std::string_view(begin == nullptr ? "" : begin, file->size_bytes()), path,
                                limits);
}

}  // namespace lmrun
