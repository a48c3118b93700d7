#include "kernels/linear_onednn.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/check.h"
#include "core/dtype.h"
#include "core/parallel.h"
#include "kernels/thread_buffer.h"

namespace lmrun::kernels {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// A stream per calling thread: oneDNN streams are not meant to be shared across threads.
dnnl::stream& thread_stream() {
    thread_local dnnl::stream stream(cpu_engine());
    return stream;
}

// Activations rounded to BF16 for the BF16×BF16 matmul; shared by all weights of a thread and
// grown to the largest num_rows × in_features seen, so steady-state calls do not allocate.
struct OnednnXBf16;
std::vector<uint16_t>& thread_x_bf16(size_t count) {
    return thread_buffer<OnednnXBf16, uint16_t>(count);
}

void convert_rows_to_bf16(const float* x, size_t count, uint16_t* out) {
    parallel_for(int64_t(count), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = f32_to_bf16(x[i]);
    });
}

}  // namespace

struct OnednnLinear::Entry {
    bool usable = false;
    dnnl::matmul primitive;
    dnnl::memory src, weights, bias, dst, scratchpad;
    std::unordered_map<int, dnnl::memory> args;
};

OnednnLinear::OnednnLinear() = default;
OnednnLinear::~OnednnLinear() = default;

OnednnLinear::Entry& OnednnLinear::entry(int64_t num_rows, bool has_bias, const PackedLinear& w) {
    auto key = std::make_pair(num_rows, has_bias);
    auto found = entries_.find(key);
    if (found != entries_.end()) return *found->second;

    auto created = std::make_unique<Entry>();
    Entry& e = *created;
    bool bf16 = w.dtype == DType::BF16;
    dt weight_type = bf16 ? dt::bf16 : dt::f32;
    dnnl::memory::dims src_dims = {num_rows, w.in_features};
    dnnl::memory::dims weight_dims = {w.in_features, w.out_features};
    dnnl::memory::dims dst_dims = {num_rows, w.out_features};
    dnnl::memory::desc src_md(src_dims, weight_type, tag::ab);
    dnnl::memory::desc weight_md(weight_dims, weight_type, bf16 ? tag::BA16a64b2a : tag::BA16a64b);
    dnnl::memory::desc bias_md({1, w.out_features}, dt::f32, tag::ab);
    dnnl::memory::desc dst_md(dst_dims, dt::f32, tag::ab);
    LMRUN_CHECK(weight_md.get_size() == size_t(w.num_tiles * w.tile_elements()) * (bf16 ? 2 : 4),
                "packed weight size differs from oneDNN's blocked layout");

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    try {
        auto desc = has_bias ? dnnl::matmul::desc(src_md, weight_md, bias_md, dst_md)
                             : dnnl::matmul::desc(src_md, weight_md, dst_md);
        dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
        e.usable = std::string(pd.impl_info_str()).find("ref") == std::string::npos;
        if (e.usable) {
            e.primitive = dnnl::matmul(pd);
            dnnl::engine& engine = cpu_engine();
            // oneDNN only reads the weights; the const_cast is for its untyped handle.
            e.weights = dnnl::memory(weight_md, engine, const_cast<void*>(w.data));
            e.src = dnnl::memory(src_md, engine, DNNL_MEMORY_NONE);
            e.dst = dnnl::memory(dst_md, engine, DNNL_MEMORY_NONE);
            e.scratchpad = dnnl::memory(pd.scratchpad_desc(), engine);
            e.args = {{DNNL_ARG_SRC, e.src},
                      {DNNL_ARG_WEIGHTS, e.weights},
                      {DNNL_ARG_DST, e.dst},
                      {DNNL_ARG_SCRATCHPAD, e.scratchpad}};
            if (has_bias) {
                e.bias = dnnl::memory(bias_md, engine, DNNL_MEMORY_NONE);
                e.args[DNNL_ARG_BIAS] = e.bias;
            }
        }
    } catch (const dnnl::error&) {
        e.usable = false;  // no implementation for this dtype on this CPU
    }
    return *entries_.emplace(key, std::move(created)).first->second;
}

bool OnednnLinear::run(const float* x, int64_t num_rows, const PackedLinear& w, const float* bias, float* y) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entry(num_rows, bias != nullptr, w);
    if (!e.usable) return false;
    if (w.dtype == DType::BF16) {
        size_t count = size_t(num_rows * w.in_features);
        std::vector<uint16_t>& x_bf16 = thread_x_bf16(count);
        convert_rows_to_bf16(x, count, x_bf16.data());
        e.src.set_data_handle(x_bf16.data());
    } else {
        e.src.set_data_handle(const_cast<float*>(x));
    }
    e.dst.set_data_handle(y);
    if (bias) e.bias.set_data_handle(const_cast<float*>(bias));
    dnnl::stream& stream = thread_stream();
    e.primitive.execute(stream, e.args);
    stream.wait();
    return true;
}

}  // namespace lmrun::kernels
