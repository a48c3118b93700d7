// Compiles constraints for one vocabulary and caches the results by the
// constraint's key (its kind and text), least recently used first out, so the
// same schema sent again costs a hash lookup. Thread-safe: the server compiles
// (and so validates) a request's constraint on its HTTP thread; the engine then
// finds it cached. Two threads compiling the same key at once both compile;
// one result is kept.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/result.h"
#include "structured/compiled_grammar.h"
#include "structured/structured_outputs_params.h"

namespace lmrun::structured {

class GrammarCompiler {
  public:
    explicit GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocabulary, size_t max_cached = 256);

    // Errors name the constraint kind and the problem (e.g. "regex: invalid regex at position 3: ...").
    Result<std::shared_ptr<const CompiledGrammar>> compile(const StructuredOutputsParams& params);

    const TokenVocabulary& vocabulary() const { return *vocabulary_; }
    std::shared_ptr<const TokenVocabulary> shared_vocabulary() const { return vocabulary_; }
    int64_t num_hits() const;
    int64_t num_misses() const;

  private:
    using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;

    std::shared_ptr<const TokenVocabulary> vocabulary_;
    size_t max_cached_;
    mutable std::mutex mutex_;
    std::list<Entry> entries_;  // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    int64_t num_hits_ = 0;
    int64_t num_misses_ = 0;
};

}  // namespace lmrun::structured
