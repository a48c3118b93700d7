#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

namespace lmrun {

Result<PostProcessor> PostProcessor::from_json(const nlohmann::json& spec) {
    PostProcessor processor;
    if (spec.is_null()) return processor;
    processor.defined_ = true;
    LMRUN_RETURN_IF_ERROR(processor.append(spec));
    return processor;
}

Status PostProcessor::append(const nlohmann::json& spec) {
    if (!spec.is_object() || !spec.contains("type")) return make_error("post_processor without a type");
    const std::string type = spec["type"].get<std::string>();
    if (type == "Sequence") {
        for (const auto& child : spec.at("processors")) LMRUN_RETURN_IF_ERROR(append(child));
        return ok_status();
    }
    if (type == "ByteLevel") return ok_status();  // only adjusts offsets
    if (type == "TemplateProcessing") return append_template(spec);
    if (type == "BertProcessing" || type == "RobertaProcessing") {
        // "cls": [token, id], "sep": [token, id]
        prefix_ids_.push_back(spec.at("cls").at(1).get<int32_t>());
        suffix_ids_.insert(suffix_ids_.begin(), spec.at("sep").at(1).get<int32_t>());
        return ok_status();
    }
    return make_error(ErrorKind::Unsupported, "unsupported post_processor type '{}'", type);
}

Status PostProcessor::append_template(const nlohmann::json& spec) {
    const auto& special_tokens = spec.at("special_tokens");
    bool after_sequence = false;
    std::vector<int32_t> prefix, suffix;
    for (const auto& item : spec.at("single")) {
        if (item.contains("Sequence")) {
            after_sequence = true;
            continue;
        }
        const std::string name = item.at("SpecialToken").at("id").get<std::string>();
        if (!special_tokens.contains(name)) {
            return make_error("post_processor: special token '{}' missing from special_tokens", name);
        }
        std::vector<int32_t>& target = after_sequence ? suffix : prefix;
        for (const auto& id : special_tokens[name].at("ids")) target.push_back(id.get<int32_t>());
    }
    prefix_ids_.insert(prefix_ids_.end(), prefix.begin(), prefix.end());
    suffix_ids_.insert(suffix_ids_.begin(), suffix.begin(), suffix.end());
    return ok_status();
}

void PostProcessor::apply(std::vector<int32_t>& ids) const {
    ids.insert(ids.begin(), prefix_ids_.begin(), prefix_ids_.end());
    ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
}

void PostProcessor::set_ids(std::vector<int32_t> prefix_ids, std::vector<int32_t> suffix_ids) {
    prefix_ids_ = std::move(prefix_ids);
    suffix_ids_ = std::move(suffix_ids);
}

}  // namespace lmrun
