// How tokenizer.json's normalizer, pre_tokenizer and decoder sections are read: each is one
// typed step ({"type": ...}) or a "Sequence" of them (under "normalizers", "pretokenizers" or
// "decoders"), nested sequences flattened in order.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace lmrun {

// Appends the steps `spec` stands for to `steps`: a "Sequence" recurses into
// spec[children_key]; any other type is read by `read_step(type, spec)` (a Result<Step>).
// `component` names the section in errors ("decoder without a type").
template <typename Step, typename ReadStep>
Status append_component_steps(const nlohmann::json& spec, const char* component, const char* children_key,
                              std::vector<Step>& steps, const ReadStep& read_step) {
    if (!spec.is_object() || !spec.contains("type")) return make_error("{} without a type", component);
    const std::string type = spec["type"].get<std::string>();
    if (type == "Sequence") {
        for (const auto& child : spec.at(children_key))
            LMRUN_RETURN_IF_ERROR(append_component_steps(child, component, children_key, steps, read_step));
        return ok_status();
    }
    LMRUN_ASSIGN_OR_RETURN(Step step, read_step(type, spec));
    steps.push_back(std::move(step));
    return ok_status();
}

}  // namespace lmrun
