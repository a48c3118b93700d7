#include "structured/grammar_compiler.h"

namespace lmrun::structured {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocabulary, size_t max_cached)
    : vocabulary_(std::move(vocabulary)), max_cached_(std::max<size_t>(max_cached, 1)) {}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCompiler::compile(
    const StructuredOutputsParams& params) {
    const std::string key = params.cache_key();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = index_.find(key);
        if (found != index_.end()) {
            entries_.splice(entries_.begin(), entries_, found->second);
            ++num_hits_;
            return found->second->second;
        }
        ++num_misses_;
    }
    auto with_kind = [&](const Error& error) {
        Error out = error;
        out.message = std::string(params.kind_name()) + ": " + error.message;
        return out;
    };
    auto grammar = build_grammar(params);
    if (!grammar.ok()) return with_kind(grammar.error());
    auto compiled = CompiledGrammar::compile(*grammar, vocabulary_);
    if (!compiled.ok()) return with_kind(compiled.error());
    std::lock_guard<std::mutex> lock(mutex_);
    if (index_.count(key)) return index_[key]->second;
    entries_.emplace_front(key, *compiled);
    index_[key] = entries_.begin();
    while (entries_.size() > max_cached_) {
        index_.erase(entries_.back().first);
        entries_.pop_back();
    }
    return *compiled;
}

int64_t GrammarCompiler::num_hits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return num_hits_;
}

int64_t GrammarCompiler::num_misses() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return num_misses_;
}

}  // namespace lmrun::structured
