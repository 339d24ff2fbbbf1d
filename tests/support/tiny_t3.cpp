#include "support/tiny_t3.h"

#include "support/test_support.h"

namespace chatterbox::test {

TinyT3::TinyT3(const std::string &model_path) {
    PipelineModelOptions options;
    options.model_path = model_path;
    options.backend = test_backend_options(2); // the GPU under CHATTERBOX_TEST_BACKEND=cuda (ctest -L gpu)
    options.components = components(Component::t3, Component::text);
    engine = std::make_unique<PipelineModel>(options);
    backend = std::make_unique<Backend>(options.backend);
    cond = t3::encode_conditioning(engine->t3(), *backend, engine->builtin_voice(0.5f).t3);
}

std::vector<int32_t> TinyT3::text(int n_ids) const {
    std::vector<int32_t> ids;
    if (hp().framed_text != 0) ids.push_back(hp().start_text_token);
    for (int i = 0; i < n_ids; ++i) ids.push_back(1 + (i * 37) % (hp().text_vocab - 3));
    if (hp().framed_text != 0) ids.push_back(hp().stop_text_token);
    return ids;
}

} // namespace chatterbox::test
