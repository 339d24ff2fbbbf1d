// GraphRunner: a graph built once keeps its inputs intact across computes.

#include "core/graph.h"

#include <gtest/gtest.h>

using namespace chatterbox;

TEST(GraphRunner, InputWrittenOnceSurvivesRepeatedComputes) {
    Backend backend(BackendOptions{"cpu", 2});
    GraphRunner graph(backend);
    ggml_tensor *x = graph.input("x", GGML_TYPE_F32, {4});
    ggml_tensor *y = ggml_scale(graph.ctx(), ggml_add(graph.ctx(), x, x), 0.5f);
    graph.build({y});
    graph.set_input(x, std::vector<float>{1, 2, 3, 4});
    for (int run = 0; run < 3; ++run) {
        graph.compute();
        EXPECT_EQ(graph.read_f32(y), (std::vector<float>{1, 2, 3, 4})) << "run " << run;
    }
}
