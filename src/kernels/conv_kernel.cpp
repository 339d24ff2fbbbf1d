#include "kernels/conv_kernel.h"

#include <algorithm>

namespace chatterbox::kernels {

#if defined(__x86_64__)
const ConvKernel &conv1d_avx512_kernel(); // kernels/conv1d_direct.cpp, built for x86-64 only
const ConvKernel &conv1d_avx2_kernel();
#endif

const std::vector<const ConvKernel *> &conv_kernels() {
#if defined(__x86_64__)
    static const std::vector<const ConvKernel *> kernels{&conv1d_avx512_kernel(), &conv1d_avx2_kernel()};
#else
    static const std::vector<const ConvKernel *> kernels; // im2col + product everywhere
#endif
    return kernels;
}

const ConvKernel *choose_conv_kernel(const KernelSelection &selection) {
    for (const ConvKernel *kernel : conv_kernels())
        if (kernel->runs_here() &&
            std::find(selection.disable.begin(), selection.disable.end(), kernel->name()) == selection.disable.end())
            return kernel;
    return nullptr;
}

const ConvKernel *find_conv_kernel(const std::string &name) {
    for (const ConvKernel *kernel : conv_kernels())
        if (name == kernel->name()) return kernel;
    return nullptr;
}

} // namespace chatterbox::kernels
