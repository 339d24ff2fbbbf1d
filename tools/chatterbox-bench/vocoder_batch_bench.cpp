#include "vocoder_batch_bench.h"

#include "batch_comparison.h"
#include "core/error.h"
#include "models/chatterbox/hift/vocoder_batch.h"
#include "models/chatterbox/pipeline_model.h"
#include "timing.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <thread>

namespace chatterbox::bench {

namespace {

struct MelRequest {
    std::vector<float> mel;
    hift::SourceNoise noise;
};

// Log-mel-like values (the cost does not depend on them) and the source noise of their samples.
std::vector<MelRequest> make_requests(const hift::HiftHParams &hp, int n, int64_t frames, bool varied) {
    std::mt19937_64 rng(uint64_t(n) * 1000 + uint64_t(frames));
    std::normal_distribution<float> log_mel(-5.0f, 2.0f);
    std::vector<MelRequest> requests;
    for (int k = 0; k < n; ++k) {
        const int64_t t = varied ? frames + frames * k / 10 : frames;
        MelRequest r;
        r.mel.resize(size_t(hp.mel_bins * t));
        for (float &v : r.mel) v = log_mel(rng);
        TorchGenerator noise_rng(rng());
        r.noise = hift::draw_source_noise(noise_rng, hp.harmonics, t * hp.samples_per_frame());
        requests.push_back(std::move(r));
    }
    return requests;
}

// 0.2 s of audio: long enough for the requests to queue behind it.
constexpr int64_t kOpenerFrames = 10;

} // namespace

nlohmann::json run_vocoder_batch_bench(const BackendOptions &backend, const VocoderBatchBenchArguments &options) {
    if (options.frames < 1 || options.rounds < 1) fail("vocoder batch bench: need >= 1 frame and >= 1 round");
    const PipelineModel engine({options.weights, backend, components(Component::vocoder)});
    const hift::HiftHParams &hp = engine.vocoder().hparams();
    Backend session_backend(backend);
    hift::VocoderSession alone(engine.vocoder(), session_backend);

    nlohmann::json rows = nlohmann::json::array();
    for (int round = 0; round < options.rounds; ++round)
        for (int n : options.levels)
            for (bool varied : {false, true}) {
                if (n < 1) fail("vocoder batch bench: level ", n, ", expected 1 or more");
                if (varied && n == 1) continue; // one request has one length
                const std::vector<MelRequest> requests = make_requests(hp, n, options.frames, varied);
                double audio_s = 0;
                std::vector<std::vector<float>> sequential;
                const Clock::time_point sequential_start = Clock::now();
                for (const MelRequest &r : requests) {
                    sequential.push_back(alone.synthesize(r.mel, &r.noise));
                    audio_s += double(sequential.back().size()) / hp.sample_rate;
                }
                const double sequential_s = ms_since(sequential_start) / 1e3;

                hift::VocoderBatchOptions batch_options;
                batch_options.max_requests = n;
                batch_options.max_padding = 1.0; // the varied lengths all join: what does padding cost?
                hift::VocoderBatch batch(engine.vocoder(), backend, batch_options);
                std::vector<std::vector<float>> batched(requests.size());
                std::vector<std::unique_ptr<hift::VocoderSession>> sessions;
                for (size_t i = 0; i < requests.size(); ++i)
                    sessions.push_back(
                        std::make_unique<hift::VocoderSession>(engine.vocoder(), session_backend, &batch));
                // The requests arrive while a short opener runs, so they all wait for the next run
                // and make one batch (alone, the first would start before the others arrive); the
                // clock starts when the opener is done.
                const MelRequest opener = make_requests(hp, 1, kOpenerFrames, false).front();
                std::thread opening([&] { batch.vocode(opener.mel, opener.noise); });
                // Until the opener is in the batch, or already done (a short opener can come and go
                // between two looks at `active`: waiting for active alone had hung 3 runs in 40 on a
                // busy machine).
                while (batch.counts().active < 1 && batch.counts().steps == 0) std::this_thread::yield();
                std::vector<std::thread> threads;
                for (size_t i = 0; i < requests.size(); ++i)
                    threads.emplace_back(
                        [&, i] { batched[i] = sessions[i]->synthesize(requests[i].mel, &requests[i].noise); });
                while (batch.counts().waiting < n && batch.counts().steps == 0) std::this_thread::yield();
                opening.join();
                const Clock::time_point batched_start = Clock::now();
                for (std::thread &t : threads) t.join();
                const double batched_s = ms_since(batched_start) / 1e3;

                BatchCounts counts = batch.counts();
                --counts.steps; // the opener's run
                --counts.request_steps;
                nlohmann::json row = {
                    {"requests", n}, {"lengths", varied ? "varied" : "equal"}, {"round", round}, {"audio_s", audio_s}};
                row.update(batch_comparison(sequential, batched, sequential_s, batched_s, counts));
                rows.push_back(std::move(row));
            }
    return rows;
}

} // namespace chatterbox::bench
