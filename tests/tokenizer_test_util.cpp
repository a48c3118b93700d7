#include "tokenizer_test_util.h"

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "test_util.h"

namespace lmrun::testing {

const Tokenizer& testdata_tokenizer(const std::string& relative) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<Tokenizer>& slot = cache[relative];
    if (!slot) {
        const std::string path = testdata_path(relative);
        auto loaded =
            std::filesystem::is_directory(path) ? Tokenizer::from_dir(path) : Tokenizer::from_file(path);
        if (!loaded.ok()) throw std::runtime_error(path + ": " + loaded.error().message);
        slot = std::move(loaded).value();
    }
    return *slot;
}

const Tokenizer& qwen3_tokenizer() {
    return testdata_tokenizer("qwen3-tokenizer/tokenizer.json");
}

const Tokenizer& stories_tokenizer() {
    return testdata_tokenizer("stories260k");
}

std::vector<int32_t> token_ids_of(const nlohmann::json& array) {
    return array.get<std::vector<int32_t>>();
}

}  // namespace lmrun::testing
