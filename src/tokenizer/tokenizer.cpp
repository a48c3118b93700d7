#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "core/json_io.h"
#include "core/logging.h"
#include "core/timer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode.h"

namespace lmrun {

namespace {

// tokenizer_config stores special tokens as a string or as {"content": ...}.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key) {
    if (!config.contains(key)) return std::nullopt;
    const auto& value = config[key];
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object() && value.contains("content") && value["content"].is_string()) {
        return value["content"].get<std::string>();
    }
    return std::nullopt;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_file(const std::string& tokenizer_json_path) {
    Stopwatch stopwatch;
    LMRUN_ASSIGN_OR_RETURN(TokenizerJson tokenizer_json, read_tokenizer_json(tokenizer_json_path));
    nlohmann::json config = nlohmann::json::object();
    const auto config_path =
        std::filesystem::path(tokenizer_json_path).parent_path() / "tokenizer_config.json";
    if (std::filesystem::exists(config_path)) {
        LMRUN_ASSIGN_OR_RETURN(config, read_json_file(config_path.string(), kTokenizerJsonLimits));
    }
    std::optional<BpeTables> tables;
    if (tokenizer_json.has_tables) tables = std::move(tokenizer_json.tables);
    auto tokenizer = build(tokenizer_json.spec, std::move(tables), std::move(config), tokenizer_json_path);
    if (tokenizer.ok()) {
        log_debug("loaded tokenizer {} ({} ids) in {:.0f} ms", tokenizer_json_path,
                  tokenizer.value()->vocab_size(), stopwatch.elapsed_seconds() * 1e3);
    }
    return tokenizer;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_text(std::string_view tokenizer_json,
                                                        nlohmann::json tokenizer_config,
                                                        const std::string& source) {
    LMRUN_ASSIGN_OR_RETURN(TokenizerJson parsed, parse_tokenizer_json(tokenizer_json, source));
    std::optional<BpeTables> tables;
    if (parsed.has_tables) tables = std::move(parsed.tables);
    return build(parsed.spec, std::move(tables), std::move(tokenizer_config), source);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_dir(const std::string& dir) {
    return from_file((std::filesystem::path(dir) / "tokenizer.json").string());
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json(const nlohmann::json& spec, nlohmann::json config,
                                                        const std::string& source) {
    return build(spec, std::nullopt, std::move(config), source);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::build(const nlohmann::json& spec,
                                                    std::optional<BpeTables> tables, nlohmann::json config,
                                                    const std::string& source) {
    if (!spec.is_object())
        return with_subject(make_error(ErrorKind::Corrupt, "{}: top level is not a JSON object", source),
                            source);
    if (!config.is_object())
        return with_subject(
            make_error(ErrorKind::Corrupt, "{}: tokenizer_config.json is not a JSON object", source), source);
    std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
    // Anything wrong inside the definition is the file's fault (Corrupt) unless it said Unsupported.
    auto with_source = [&source](const Error& error) {
        const ErrorKind kind = error.kind == ErrorKind::Unsupported ? error.kind : ErrorKind::Corrupt;
        return with_subject(make_error(kind, "{}: {}", source, error.message), source);
    };
    // nlohmann throws on type mismatches inside malformed sections; keep that
    // from crossing the library boundary.
    try {
        auto null_or = [&spec](const char* key) { return spec.contains(key) ? spec[key] : nlohmann::json(); };
        // Each component reads its own section; whatever fails is the file's fault (with_source).
        auto load = [&]() -> Status {
            LMRUN_ASSIGN_OR_RETURN(tokenizer->model_,
                                   tables ? BpeModel::build(null_or("model"), std::move(*tables))
                                          : BpeModel::from_json(null_or("model")));
            LMRUN_ASSIGN_OR_RETURN(tokenizer->added_, AddedVocabulary::from_json(null_or("added_tokens")));
            LMRUN_ASSIGN_OR_RETURN(tokenizer->normalizer_, Normalizer::from_json(null_or("normalizer")));
            LMRUN_ASSIGN_OR_RETURN(tokenizer->pre_tokenizer_,
                                   PreTokenizer::from_json(null_or("pre_tokenizer")));
            LMRUN_ASSIGN_OR_RETURN(tokenizer->post_processor_,
                                   PostProcessor::from_json(null_or("post_processor")));
            LMRUN_ASSIGN_OR_RETURN(tokenizer->decoder_, Decoder::from_json(null_or("decoder")));
            tokenizer->config_ = std::move(config);
            const Normalizer& normalizer_ref = tokenizer->normalizer_;
            tokenizer->added_.normalize_contents(
                [&](const std::string& s) { return normalizer_ref.normalize(s); });
            return tokenizer->configure_special_tokens();
        };
        if (Status loaded = load(); !loaded.ok()) return with_source(loaded.error());
    } catch (const nlohmann::json::exception& e) {
        return with_subject(
            make_error(ErrorKind::Corrupt, "{}: invalid tokenizer definition: {}", source, e.what()), source);
    }
    return tokenizer;
}

Status Tokenizer::configure_special_tokens() {
    auto lookup = [this](const char* key, std::optional<int32_t>& id, std::string* text = nullptr) -> Status {
        const auto token = config_token(config_, key);
        if (!token) return ok_status();
        if (text) *text = *token;
        id = token_to_id(*token);
        if (!id) return make_error("tokenizer_config {} '{}' is not in the vocabulary", key, *token);
        return ok_status();
    };
    LMRUN_RETURN_IF_ERROR(lookup("bos_token", bos_token_id_, &bos_token_));
    LMRUN_RETURN_IF_ERROR(lookup("eos_token", eos_token_id_, &eos_token_));
    LMRUN_RETURN_IF_ERROR(lookup("pad_token", pad_token_id_));
    // Without a post-processor, transformers adds BOS/EOS per tokenizer_config.
    if (!post_processor_.is_defined()) {
        std::vector<int32_t> prefix, suffix;
        if (config_.value("add_bos_token", false) && bos_token_id_) prefix.push_back(*bos_token_id_);
        if (config_.value("add_eos_token", false) && eos_token_id_) suffix.push_back(*eos_token_id_);
        post_processor_.set_ids(std::move(prefix), std::move(suffix));
    }
    return ok_status();
}

void Tokenizer::encode_normalized(std::string_view normalized, bool at_input_start,
                                  std::vector<int32_t>& ids) const {
    for (const std::string& piece : pre_tokenizer_.pre_tokenize(normalized, at_input_start)) {
        model_.encode_piece(piece, ids);
    }
}

void Tokenizer::encode_text(std::string_view text, bool at_input_start, std::vector<int32_t>& ids) const {
    const std::string normalized = normalizer_.normalize(text);
    if (!added_.has_normalized_tokens()) {
        encode_normalized(normalized, at_input_start, ids);
        return;
    }
    bool first = true;
    for (const TextSplit& split : added_.split(normalized, /*normalized=*/true)) {
        if (split.token_id) {
            ids.push_back(*split.token_id);
        } else {
            encode_normalized(split.text, at_input_start && first, ids);
        }
        first = false;
    }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    std::string repaired;
    if (!unicode::is_valid_utf8(text)) {
        repaired = unicode::utf8_lossy(text);
        text = repaired;
    }
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    const std::vector<TextSplit> splits = added_.split(text, /*normalized=*/false);
    for (size_t i = 0; i < splits.size(); ++i) {
        if (splits[i].token_id) {
            ids.push_back(*splits[i].token_id);
        } else {
            encode_text(splits[i].text, /*at_input_start=*/i == 0, ids);
        }
    }
    if (add_special_tokens) post_processor_.apply(ids);
    return ids;
}

const std::string* Tokenizer::token_string(int32_t id) const {
    if (const AddedToken* added = added_.find_by_id(id)) return &added->content;
    return model_.id_to_token(id);
}

bool Tokenizer::decodes_to_token(int32_t id, bool skip_special_tokens) const {
    if (token_string(id) == nullptr) return false;
    return !(skip_special_tokens && is_special(id));
}

bool Tokenizer::is_fallback_byte(int32_t id) const {
    const std::string* token = token_string(id);
    return token != nullptr && added_.find_by_id(id) == nullptr && decoder_.is_fallback_byte(*token);
}

std::string Tokenizer::decode_chunk(std::span<const int32_t> ids, bool skip_special_tokens,
                                    bool at_sequence_start) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
        if (decodes_to_token(id, skip_special_tokens)) tokens.push_back(*token_string(id));
    }
    return decoder_.decode(std::move(tokens), at_sequence_start);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
    return decode_chunk(ids, skip_special_tokens, /*at_sequence_start=*/true);
}

int32_t Tokenizer::vocab_size() const {
    int32_t size = model_.num_ids();
    for (const AddedToken& token : added_.tokens()) size = std::max(size, token.id + 1);
    return size;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
    if (const auto id = added_.find_by_content(token)) return id;
    return model_.token_to_id(token);
}

std::string Tokenizer::id_to_token(int32_t id) const {
    const std::string* token = token_string(id);
    return token ? *token : std::string();
}

bool Tokenizer::is_special(int32_t id) const {
    const AddedToken* added = added_.find_by_id(id);
    return added != nullptr && added->special;
}

}  // namespace lmrun
