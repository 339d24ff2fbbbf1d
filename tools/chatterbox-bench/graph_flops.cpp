#include "graph_flops.h"

#include "kernels/matmul_kernel.h"
#include "kernels/onednn.h"

namespace chatterbox::bench {

NodeFlops node_flops(const ggml_tensor *node) {
    NodeFlops flops;
    if (node->op == GGML_OP_MUL_MAT) {
        flops.matmul = 2.0 * double(node->src[0]->ne[0]) * double(ggml_nelements(node));
    } else if (node->op == GGML_OP_FLASH_ATTN_EXT) {
        const ggml_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2];
        const double pairs = double(q->ne[1]) * double(k->ne[1]) * double(q->ne[2]) * double(q->ne[3]);
        flops.attention = 2.0 * pairs * double(q->ne[0] + v->ne[0]);
    } else if (node->op == GGML_OP_CUSTOM) {
        flops.matmul = kernels::kernel_node_flops(node);
        flops.attention = kernels::blocked_attention_flops(node);
    }
    return flops;
}

NodeFlops graph_flops(const ggml_cgraph *graph) {
    NodeFlops sum;
    ggml_cgraph *nodes = const_cast<ggml_cgraph *>(graph); // ggml's accessors take no const graph
    for (int i = 0; i < ggml_graph_n_nodes(nodes); ++i) {
        const NodeFlops flops = node_flops(ggml_graph_node(nodes, i));
        sum.matmul += flops.matmul;
        sum.attention += flops.attention;
    }
    return sum;
}

void StageFlops::set_stage(const std::string &stage) {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = stage;
}

void StageFlops::computed(const ggml_cgraph *graph) {
    const double flops = graph_flops(graph).total();
    std::lock_guard<std::mutex> lock(mutex_);
    flops_[stage_] += flops;
}

double StageFlops::flops(const std::string &stage) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = flops_.find(stage);
    return found == flops_.end() ? 0 : found->second;
}

} // namespace chatterbox::bench
