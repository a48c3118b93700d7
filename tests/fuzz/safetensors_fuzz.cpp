// Fuzzes SafetensorsFile::open on arbitrary files: it must return an error or a header
// whose every tensor lies inside the file, with a size matching its shape and dtype, and
// no two tensors sharing a byte.
#include <algorithm>
#include <vector>

#include "fuzz_util.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace lmrun;
    static fuzz::MemoryFile file("safetensors");
    file.write(data, size);
    Result<SafetensorsFile> opened = SafetensorsFile::open(file.path());
    if (!opened.ok()) {
        fuzz::require(!opened.error().message.empty() && opened.error().subject == file.path(),
                      "an error names the file");
        return 0;
    }
    std::vector<std::pair<const uint8_t*, size_t>> spans;
    for (const TensorInfo& tensor : opened->tensors()) {
        fuzz::require(tensor.nbytes == size_t(tensor.numel()) * dtype_size_bytes(tensor.dtype),
                      "size matches shape");
        const auto* begin = static_cast<const uint8_t*>(tensor.data);
        // The mapping holds the same bytes as `data`: offsets must fall inside it.
        fuzz::require(tensor.nbytes <= size, "tensor fits the file");
        if (tensor.nbytes > 0) {
            volatile uint8_t first = begin[0];
            volatile uint8_t last = begin[tensor.nbytes - 1];
            (void)first;
            (void)last;
        }
        fuzz::require(opened->find(tensor.name) == &tensor, "find() returns the tensor");
        spans.emplace_back(begin, tensor.nbytes);
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
        fuzz::require(spans[i - 1].first + spans[i - 1].second <= spans[i].first, "tensors do not overlap");
    return 0;
}
