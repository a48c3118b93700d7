#include "core/json_io.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace lmrun {
namespace {

// Counts nesting and stops the parse (returns false) past the limit; records a syntax error.
class DepthCheck final : public nlohmann::json_sax<nlohmann::json> {
  public:
    explicit DepthCheck(int max_depth) : max_depth_(max_depth) {}

    bool too_deep() const { return too_deep_; }
    const std::string& syntax_error() const { return syntax_error_; }

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return enter(); }
    bool key(string_t&) override { return true; }
    bool end_object() override { return leave(); }
    bool start_array(std::size_t) override { return enter(); }
    bool end_array() override { return leave(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
        syntax_error_ = error.what();
        return false;
    }

  private:
    bool enter() {
        if (++depth_ <= max_depth_) return true;
        too_deep_ = true;
        return false;
    }
    bool leave() {
        --depth_;
        return true;
    }

    int max_depth_;
    int depth_ = 0;
    bool too_deep_ = false;
    std::string syntax_error_;
};

// Builds an ordered_json document from SAX events without recursion, counting nesting
// (stops past the limit) and finding repeated keys through a hash of each key.
class OrderedBuilder final : public nlohmann::json_sax<nlohmann::ordered_json> {
  public:
    using Json = nlohmann::ordered_json;

    OrderedBuilder(int max_depth, JsonParseStats* stats) : max_depth_(max_depth), stats_(stats) {}

    Json& root() { return root_; }
    bool too_deep() const { return too_deep_; }
    const std::string& syntax_error() const { return syntax_error_; }

    bool null() override { return add(Json(nullptr)) != nullptr; }
    bool boolean(bool value) override { return add(Json(value)) != nullptr; }
    bool number_integer(number_integer_t value) override { return add(Json(value)) != nullptr; }
    bool number_unsigned(number_unsigned_t value) override { return add(Json(value)) != nullptr; }
    bool number_float(number_float_t value, const string_t&) override { return add(Json(value)) != nullptr; }
    bool string(string_t& value) override { return add(Json(std::move(value))) != nullptr; }
    bool binary(binary_t& value) override { return add(Json::binary(std::move(value))) != nullptr; }
    bool start_object(std::size_t) override { return open(Json::object()); }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(Json::array()); }
    bool end_array() override { return close(); }
    bool key(string_t& name) override;
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
        syntax_error_ = error.what();
        return false;
    }

  private:
    struct Level {
        Json* container = nullptr;
        Json* slot = nullptr;                               // objects: where the value of the last key goes
        std::unordered_multimap<size_t, size_t> key_index;  // objects: hash of a key -> its position
    };

    // Places a value in the innermost open container (or as the root); returns where it lives.
    // Pointers stay valid: a container only grows again after its newest child is closed.
    Json* add(Json value) {
        if (levels_.empty()) {
            root_ = std::move(value);
            return &root_;
        }
        Level& top = levels_.back();
        if (top.container->is_array()) {
            auto& items = top.container->get_ref<Json::array_t&>();
            items.push_back(std::move(value));
            return &items.back();
        }
        *top.slot = std::move(value);
        return top.slot;
    }
    bool open(Json container) {
        if (int(levels_.size()) >= max_depth_) {
            too_deep_ = true;
            return false;
        }
        Level level;
        level.container = add(std::move(container));
        levels_.push_back(std::move(level));
        return true;
    }
    bool close() {
        levels_.pop_back();
        return true;
    }

    int max_depth_;
    JsonParseStats* stats_;
    Json root_;
    std::vector<Level> levels_;
    bool too_deep_ = false;
    std::string syntax_error_;
};

bool OrderedBuilder::key(string_t& name) {
    Level& top = levels_.back();
    auto& entries = top.container->get_ref<Json::object_t&>();
    const size_t hash = std::hash<std::string>{}(name);
    auto [first, last] = top.key_index.equal_range(hash);
    for (auto it = first; it != last; ++it) {
        if (stats_) ++stats_->key_comparisons;
        auto entry = entries.begin() + std::ptrdiff_t(it->second);
        if (entry->first == name) {
            top.slot = &entry->second;
            return true;
        }
    }
    top.key_index.emplace(hash, entries.size());
    entries.emplace_back(std::move(name), nullptr);  // the vector's append: no search
    top.slot = &entries.back().second;
    return true;
}

Error too_large(std::string_view source, size_t size, size_t limit) {
    return with_subject(make_error(ErrorKind::ResourceExhausted,
                                   "{}: {} bytes of JSON, more than the limit of {}", source, size, limit),
                        std::string(source));
}

Error too_deep(std::string_view source, int max_depth) {
    return with_subject(
        make_error(ErrorKind::ResourceExhausted, "{}: JSON nested deeper than {} levels", source, max_depth),
        std::string(source));
}

Error malformed(std::string_view source, const std::string& detail) {
    if (detail.empty())
        return with_subject(make_error(ErrorKind::Corrupt, "{}: malformed JSON", source),
                            std::string(source));
    return with_subject(make_error(ErrorKind::Corrupt, "{}: malformed JSON ({})", source, detail),
                        std::string(source));
}

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text, std::string_view source, const JsonLimits& limits) {
    if (text.size() > limits.max_bytes) return too_large(source, text.size(), limits.max_bytes);
    DepthCheck check(limits.max_depth);
    nlohmann::json::sax_parse(text.begin(), text.end(), &check, nlohmann::json::input_format_t::json,
                              /*strict=*/true);
    if (check.too_deep()) return too_deep(source, limits.max_depth);
    if (!check.syntax_error().empty()) return malformed(source, check.syntax_error());
    nlohmann::json json =
        nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return malformed(source, "");
    return json;
}

Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text, std::string_view source,
                                                  const JsonLimits& limits, JsonParseStats* stats) {
    if (text.size() > limits.max_bytes) return too_large(source, text.size(), limits.max_bytes);
    OrderedBuilder builder(limits.max_depth, stats);
    const bool parsed = nlohmann::ordered_json::sax_parse(text.begin(), text.end(), &builder,
                                                          nlohmann::ordered_json::input_format_t::json,
                                                          /*strict=*/true);
    if (builder.too_deep()) return too_deep(source, limits.max_depth);
    if (!parsed || !builder.syntax_error().empty()) return malformed(source, builder.syntax_error());
    return std::move(builder.root());
}

Result<nlohmann::json> read_json_file(const std::string& path, const JsonLimits& limits) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file) return with_subject(make_error(ErrorKind::NotFound, "{}: cannot open file", path), path);
    std::string text;
    char chunk[1 << 16];
    size_t read = 0;
    while ((read = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) {
        if (text.size() + read > limits.max_bytes)
            return with_subject(
                make_error(ErrorKind::ResourceExhausted, "{}: file larger than the limit of {} bytes", path,
                           limits.max_bytes),
                path);
        text.append(chunk, read);
    }
    if (std::ferror(file.get()))
        return with_subject(make_error(ErrorKind::NotFound, "{}: read error", path), path);
    return parse_json(text, path, limits);
}

}  // namespace lmrun
