#include "core/json_io.h"

#include <cstdio>
#include <memory>

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

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text, std::string_view source, const JsonLimits& limits) {
    if (text.size() > limits.max_bytes)
        return with_subject(
            make_error(ErrorKind::ResourceExhausted, "{}: {} bytes of JSON, more than the limit of {}",
                       source, text.size(), limits.max_bytes),
            std::string(source));
    DepthCheck check(limits.max_depth);
    nlohmann::json::sax_parse(text.begin(), text.end(), &check, nlohmann::json::input_format_t::json,
                              /*strict=*/true);
    if (check.too_deep())
        return with_subject(make_error(ErrorKind::ResourceExhausted, "{}: JSON nested deeper than {} levels",
                                       source, limits.max_depth),
                            std::string(source));
    if (!check.syntax_error().empty())
        return with_subject(
            make_error(ErrorKind::Corrupt, "{}: malformed JSON ({})", source, check.syntax_error()),
            std::string(source));
    nlohmann::json json =
        nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded())
        return with_subject(make_error(ErrorKind::Corrupt, "{}: malformed JSON", source),
                            std::string(source));
    return json;
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
