// Writes the seed corpora of the fuzz targets from ../shared/testdata, at run time (the
// test data is never copied into the repository):
//   make_fuzz_seeds OUT_DIR   ->  OUT_DIR/<target>/seed-*
// safetensors: the real files' headers (data cut off) and small valid files with the real
// tensor names; config: the real config.json files; tokenizer: encode inputs from the
// golden strings, the stories260k tokenizer.json and a Qwen3 tokenizer.json cut down to
// 1000 ids; jinja: the Qwen3 chat template; request: chat requests from the chat-template
// goldens and a few completion requests.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "model/safetensors_writer.h"

namespace {

namespace fs = std::filesystem;
using lmrun::fuzz::read_file;
using lmrun::fuzz::testdata_path;

class SeedWriter {
  public:
    SeedWriter(const fs::path& out, const std::string& target) : dir_(out / target) {
        fs::create_directories(dir_);
    }
    void add(const std::string& bytes) {
        std::ofstream(dir_ / ("seed-" + std::to_string(count_++)), std::ios::binary) << bytes;
    }
    int count() const { return count_; }

  private:
    fs::path dir_;
    int count_ = 0;
};

void safetensors_seeds(const fs::path& out) {
    SeedWriter seeds(out, "safetensors_fuzz");
    for (const char* file : {"stories260k/model.safetensors", "qwen3-tiny/model.safetensors",
                             "qwen2-tiny/model.safetensors", "stories260k/reference_logits.safetensors"}) {
        const std::string bytes = read_file(testdata_path(file));
        if (bytes.size() < 8) continue;
        uint64_t header_bytes = 0;
        for (int i = 0; i < 8; ++i) header_bytes |= uint64_t(uint8_t(bytes[i])) << (8 * i);
        if (header_bytes > bytes.size() - 8) continue;
        seeds.add(bytes.substr(0, 8 + header_bytes));  // the header alone: its data is cut off
    }
    // Small, valid files with the names a checkpoint has.
    const fs::path tmp = out / "tmp.safetensors";
    std::vector<float> f32(64, 0.5f);
    std::vector<uint16_t> bf16(64, 0x3f80);
    std::vector<int64_t> i64(8, 7);
    const std::vector<std::vector<lmrun::TensorToWrite>> files = {
        {{"model.embed_tokens.weight", lmrun::DType::F32, {4, 8}, f32.data()},
         {"model.norm.weight", lmrun::DType::F32, {8}, f32.data()}},
        {{"model.layers.0.self_attn.q_proj.weight", lmrun::DType::BF16, {8, 8}, bf16.data()},
         {"lm_head.weight", lmrun::DType::F16, {2, 4}, bf16.data()},
         {"positions", lmrun::DType::I64, {8}, i64.data()},
         {"empty", lmrun::DType::I32, {0, 3}, i64.data()}},
    };
    for (const auto& tensors : files) {
        if (lmrun::write_safetensors(tmp.string(), tensors).ok()) seeds.add(read_file(tmp.string()));
    }
    fs::remove(tmp);
    std::printf("safetensors_fuzz: %d seeds\n", seeds.count());
}

void config_seeds(const fs::path& out) {
    SeedWriter seeds(out, "config_fuzz");
    for (const char* model : {"stories260k", "qwen3-tiny", "qwen2-tiny"})
        seeds.add(read_file(testdata_path(std::string(model) + "/config.json")));
    std::printf("config_fuzz: %d seeds\n", seeds.count());
}

// Qwen3's tokenizer.json with the vocab cut to ids below `max_id` and the merges that
// still apply within it: every section of the real file, small enough for a seed. Read as
// nlohmann::json (keys sorted), not ordered_json: ordered_json finds each key by a linear search,
// so the 151k-entry vocab took 24 s to parse (35 s under ASan), json 0.2 s.
std::string small_qwen3_tokenizer(int64_t max_id) {
    nlohmann::json spec = nlohmann::json::parse(read_file(testdata_path("qwen3-tokenizer/tokenizer.json")));
    nlohmann::json vocab = nlohmann::json::object();
    std::set<std::string> kept;
    for (const auto& [token, id] : spec["model"]["vocab"].items()) {
        if (id.get<int64_t>() >= max_id) continue;
        vocab[token] = id;
        kept.insert(token);
    }
    nlohmann::json merges = nlohmann::json::array();
    for (const auto& merge : spec["model"]["merges"]) {
        const std::string left = merge.is_array() ? merge[0].get<std::string>() : "";
        const std::string right = merge.is_array() ? merge[1].get<std::string>() : "";
        if (kept.count(left) && kept.count(right) && kept.count(left + right)) merges.push_back(merge);
    }
    spec["model"]["vocab"] = vocab;
    spec["model"]["merges"] = merges;
    return spec.dump();
}

void tokenizer_seeds(const fs::path& out) {
    SeedWriter seeds(out, "tokenizer_fuzz");
    // Even first byte: text for the real tokenizers (0: Qwen3, 2: stories260k).
    const std::pair<const char*, char> goldens[] = {{"qwen3-tokenizer/golden_public.jsonl", '\0'},
                                                    {"stories260k/tokenizer_golden.jsonl", '\2'}};
    for (const auto& [file, mode] : goldens) {
        std::istringstream lines(read_file(testdata_path(file)));
        std::string line;
        for (int i = 0; i < 60 && std::getline(lines, line); ++i) {
            const auto record = nlohmann::json::parse(line, nullptr, false);
            if (record.is_object() && record.contains("text") && record["text"].is_string())
                seeds.add(std::string(1, mode) + record["text"].get<std::string>());
        }
    }
    // Odd first byte: a tokenizer.json.
    seeds.add("\1" + read_file(testdata_path("stories260k/tokenizer.json")));
    seeds.add("\1" + small_qwen3_tokenizer(1000));
    std::printf("tokenizer_fuzz: %d seeds\n", seeds.count());
}

void jinja_seeds(const fs::path& out) {
    SeedWriter seeds(out, "jinja_fuzz");
    const auto config =
        nlohmann::json::parse(read_file(testdata_path("qwen3-tokenizer/tokenizer_config.json")));
    seeds.add(config["chat_template"].get<std::string>());
    std::printf("jinja_fuzz: %d seeds\n", seeds.count());
}

void request_seeds(const fs::path& out) {
    SeedWriter seeds(out, "request_fuzz");
    const auto cases =
        nlohmann::json::parse(read_file(testdata_path("qwen3-tokenizer/chat_template_golden.json")));
    for (const auto& test_case : cases) {
        nlohmann::json request = {{"model", "m"}, {"messages", test_case["messages"]}, {"max_tokens", 8}};
        nlohmann::json kwargs = test_case.value("kwargs", nlohmann::json::object());
        if (kwargs.contains("add_generation_prompt")) {
            request["add_generation_prompt"] = kwargs["add_generation_prompt"];
            kwargs.erase("add_generation_prompt");
        }
        if (kwargs.contains("tools")) {
            request["tools"] = kwargs["tools"];
            kwargs.erase("tools");
        }
        if (!kwargs.empty()) request["chat_template_kwargs"] = kwargs;
        seeds.add(request.dump());
    }
    seeds.add(
        R"({"model": "m", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9,
                 "stop": ["\n"], "n": 2, "logprobs": 3, "seed": 42, "stream": true,
                 "stream_options": {"include_usage": true}})");
    seeds.add(R"({"prompt": [[1, 2, 3], [4, 5]], "top_k": 5, "min_p": 0.1, "repetition_penalty": 1.1,
                 "presence_penalty": 0.5, "frequency_penalty": -0.5, "ignore_eos": true, "min_tokens": 2,
                 "stop_token_ids": [2], "echo": true, "return_token_ids": true})");
    std::printf("request_fuzz: %d seeds\n", seeds.count());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_fuzz_seeds OUT_DIR\n");
        return 1;
    }
    const fs::path out = argv[1];
    // The seeds come from the shared test data beside the checkout: without it every target would
    // start from nothing, so say where it was looked for and stop.
    const std::string testdata = testdata_path("");
    if (!fs::is_directory(testdata)) {
        std::fprintf(stderr, "make_fuzz_seeds: no test data at %s (../shared/testdata beside the checkout)\n",
                     testdata.c_str());
        return 1;
    }
    try {
        safetensors_seeds(out);
        config_seeds(out);
        tokenizer_seeds(out);
        jinja_seeds(out);
        request_seeds(out);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_fuzz_seeds: %s (test data in %s)\n", e.what(), testdata.c_str());
        return 1;
    }
    return 0;
}
