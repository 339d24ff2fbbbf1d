#include "flow_batch_bench.h"

#include "batch_comparison.h"
#include "core/error.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/s3gen/flow_batch.h"
#include "timing.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

namespace chatterbox::bench {

namespace {

struct FlowRequest {
    s3gen::FlowEncoding encoding;
    std::vector<float> prompt_condition, noise;
};

std::vector<FlowRequest> make_requests(const PipelineModel &engine, s3gen::FlowSession &session,
                                       const s3gen::FlowReference &reference, int n, int tokens) {
    const s3gen::FlowHParams &hp = engine.flow().hparams();
    std::mt19937_64 rng(uint64_t(n) * 1000 + uint64_t(tokens));
    std::vector<FlowRequest> requests;
    for (int k = 0; k < n; ++k) {
        std::vector<int32_t> ids(size_t(tokens + tokens * k / 10));
        for (int32_t &id : ids) id = int32_t(rng() % uint64_t(hp.vocab));
        FlowRequest r;
        r.encoding = session.encode(ids, reference);
        r.prompt_condition = session.prompt_condition(reference, r.encoding.frames);
        r.noise = s3gen::standard_normal(size_t(hp.mel_bins * r.encoding.frames), rng);
        requests.push_back(std::move(r));
    }
    return requests;
}

// A reference of the golden case's shape with random values: prompt_tokens speech tokens, their
// 2·prompt_tokens mel frames, an x-vector (synthetic models have no built-in voice).
s3gen::FlowReference random_reference(const s3gen::FlowHParams &hp, int prompt_tokens) {
    std::mt19937_64 rng(99);
    s3gen::FlowReference reference;
    for (int i = 0; i < prompt_tokens; ++i) reference.prompt_tokens.push_back(int32_t(rng() % uint64_t(hp.vocab)));
    reference.prompt_mel = s3gen::standard_normal(size_t(prompt_tokens * hp.token_mel_ratio * hp.mel_bins), rng);
    reference.xvector = s3gen::standard_normal(size_t(hp.speaker_dim), rng);
    return reference;
}

} // namespace

nlohmann::json run_flow_batch_bench(const BackendOptions &backend, const FlowBatchBenchArguments &options) {
    if (options.tokens < 1 || options.rounds < 1) fail("flow batch bench: need >= 1 token and >= 1 round");
    const PipelineModel engine({options.weights, backend, components(Component::flow)});
    const s3gen::FlowHParams &hp = engine.flow().hparams();
    const s3gen::FlowReference reference = random_reference(hp, options.prompt_tokens);
    const int64_t prompt_frames = int64_t(reference.prompt_mel.size()) / hp.mel_bins;
    Backend session_backend(backend);
    s3gen::FlowSession session(engine.flow(), session_backend);

    nlohmann::json rows = nlohmann::json::array();
    for (int round = 0; round < options.rounds; ++round)
        for (int n : options.levels) {
            if (n < 1) fail("flow batch bench: level ", n, ", expected 1 or more");
            const std::vector<FlowRequest> requests = make_requests(engine, session, reference, n, options.tokens);
            double mel_s = 0;
            std::vector<std::vector<float>> alone;
            const Clock::time_point sequential_start = Clock::now();
            for (const FlowRequest &r : requests) {
                alone.push_back(session.solve(r.encoding, reference, r.noise));
                mel_s += double(r.encoding.frames - prompt_frames) / 50.0; // 50 mel frames a second
            }
            const double sequential_s = ms_since(sequential_start) / 1e3;

            s3gen::FlowBatchOptions batch_options;
            batch_options.max_requests = n;
            s3gen::FlowBatch batch(engine.flow(), backend, batch_options);
            std::vector<std::vector<float>> batched(requests.size());
            const Clock::time_point batched_start = Clock::now();
            std::vector<std::thread> threads;
            for (size_t i = 0; i < requests.size(); ++i)
                threads.emplace_back([&, i] {
                    batched[i] = batch.solve(requests[i].encoding, requests[i].prompt_condition, requests[i].noise);
                });
            for (std::thread &t : threads) t.join();
            const double batched_s = ms_since(batched_start) / 1e3;

            nlohmann::json row = {{"requests", n}, {"round", round}, {"mel_s", mel_s}};
            row.update(batch_comparison(alone, batched, sequential_s, batched_s, batch.counts()));
            rows.push_back(std::move(row));
        }
    return rows;
}

} // namespace chatterbox::bench
