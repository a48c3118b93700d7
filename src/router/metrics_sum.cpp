#include "router/metrics_sum.h"

#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include <fmt/format.h>

namespace lmrun::router {
namespace {

struct Sample {
    double sum = 0;
    int count = 0;
    bool averaged = false;
};

struct Family {
    std::vector<std::string> comments;  // HELP / TYPE lines
    std::vector<std::string> keys;      // "name{labels}" in first-seen order
};

// "# TYPE name counter" / "# HELP name ..." -> name.
std::string_view comment_family(std::string_view line) {
    std::string_view rest = line.substr(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const size_t space = rest.find(' ');
    if (space == std::string_view::npos) return {};
    rest = rest.substr(space + 1);
    return rest.substr(0, rest.find(' '));
}

// The sample's name without the label set.
std::string_view sample_name(std::string_view key) {
    return key.substr(0, key.find('{'));
}

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", value);
}

}  // namespace

std::string sum_prometheus_texts(const std::vector<std::string>& texts) {
    std::vector<std::string> family_order;
    std::unordered_map<std::string, Family> families;
    std::unordered_map<std::string, Sample> samples;
    for (const std::string& text : texts) {
        std::string current;  // the family of the last comment
        size_t begin = 0;
        while (begin < text.size()) {
            size_t end = text.find('\n', begin);
            if (end == std::string::npos) end = text.size();
            const std::string_view line(text.data() + begin, end - begin);
            begin = end + 1;
            if (line.empty()) continue;
            if (line.front() == '#') {
                current = std::string(comment_family(line));
                auto [entry, fresh] = families.try_emplace(current);
                if (fresh) family_order.push_back(current);
                bool seen = false;
                for (const std::string& comment : entry->second.comments) seen |= comment == line;
                if (!seen) entry->second.comments.emplace_back(line);
                continue;
            }
            const size_t space = line.rfind(' ');
            if (space == std::string_view::npos) continue;
            const std::string key(line.substr(0, space));
            const double value = std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
            const std::string family_name = current.empty() ? std::string(sample_name(key)) : current;
            auto [entry, fresh_family] = families.try_emplace(family_name);
            if (fresh_family) family_order.push_back(family_name);
            auto [sample, fresh] = samples.try_emplace(key);
            if (fresh) {
                entry->second.keys.push_back(key);
                const std::string_view name = sample_name(key);
                sample->second.averaged = name.size() >= 5 && name.substr(name.size() - 5) == "_perc";
            }
            sample->second.sum += value;
            ++sample->second.count;
        }
    }
    std::string out;
    for (const std::string& name : family_order) {
        const Family& family = families[name];
        for (const std::string& comment : family.comments) out += comment + "\n";
        for (const std::string& key : family.keys) {
            const Sample& sample = samples[key];
            const double value = sample.averaged ? sample.sum / sample.count : sample.sum;
            out += key + " " + format_value(value) + "\n";
        }
    }
    return out;
}

}  // namespace lmrun::router
