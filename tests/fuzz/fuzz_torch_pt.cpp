// libFuzzer: a PyTorch .pt file (zip archive, restricted unpickler, storages and views) through
// load_torch_pt.
#include "core/torch_pickle.h"
#include "fuzz_support.h"

namespace {

// Walks the loaded value, reading every tensor's bytes.
size_t visit(const chatterbox::PtValue &value, int depth = 0) {
    if (depth > 10000) std::abort(); // the reader bounds nesting; deeper is a finding
    size_t bytes = value.tensor ? value.tensor->bytes.size() : 0;
    for (const chatterbox::PtValue &item : value.items) bytes += visit(item, depth + 1);
    for (const auto &[key, item] : value.entries) bytes += visit(key, depth + 1) + visit(item, depth + 1);
    return bytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace chatterbox;
    const std::string &path = fuzz::write_scratch(data, size, ".pt");
    fuzz::expect_refusal_or_success([&] {
        volatile size_t bytes = visit(load_torch_pt(path));
        (void)bytes;
    });
    return 0;
}
