#include "batch_bench.h"

#include "core/error.h"
#include "models/chatterbox/engine.h"
#include "models/chatterbox/t3/batch_scheduler.h"
#include "models/chatterbox/t3/embeddings.h"
#include "request_inputs.h"
#include "timing.h"

#include <algorithm>
#include <random>
#include <thread>

namespace chatterbox::bench {

namespace {

struct Level {
    double window_s = 0, cpu_s = 0, occupancy = 0;
    size_t tokens = 0;
};

Level run_level(const Engine &engine, const BackendOptions &backend, const BatchBenchOptions &options,
                const t3::CondEmbeddings &cond, const std::vector<int32_t> &text, int requests) {
    const t3::HParams &hp = engine.t3().hparams();
    t3::BatchOptions batch_options;
    batch_options.max_sequences = requests;
    batch_options.capacity = t3::prefill_length(hp, cond, text) + options.decode_tokens + 1;
    t3::BatchScheduler scheduler(engine.t3(), backend, batch_options);
    std::vector<std::vector<Clock::time_point>> step_times(static_cast<size_t>(requests));
    const double cpu_start = process_cpu_ms();
    std::vector<std::thread> threads;
    for (int r = 0; r < requests; ++r)
        threads.emplace_back([&, r] {
            BackendOptions own = backend;
            own.threads = 1; // the prefill's; the batch computes on the scheduler's backend
            Backend request_backend(own);
            t3::Session session(engine.t3(), request_backend);
            std::mt19937_64 rng(uint64_t(r) + 1);
            std::uniform_int_distribution<int32_t> unit(0, hp.speech_token_limit - 1);
            t3::GenerationHooks hooks;
            for (int i = 0; i <= options.decode_tokens; ++i) hooks.forced_tokens.push_back(unit(rng));
            hooks.step_logits = false;
            std::vector<Clock::time_point> &times = step_times[size_t(r)];
            hooks.on_step = [&](const t3::StepRecord &) {
                times.push_back(Clock::now());
                return true;
            };
            t3::SamplingParams params;
            params.cfg_weight = options.cfg_weight;
            params.max_new_tokens = options.decode_tokens + 1;
            scheduler.generate(session, cond, text, params, hooks);
        });
    for (std::thread &t : threads) t.join();
    // The window in which every request was decoding in the batch: from the last one's first
    // batched step to the first one's last step.
    Clock::time_point begin = step_times[0][1], end = step_times[0].back();
    for (const auto &times : step_times) {
        if (times.size() < 3) fail("batch bench: a request took fewer than 3 steps");
        begin = std::max(begin, times[1]);
        end = std::min(end, times.back());
    }
    if (end <= begin)
        fail("batch bench: the requests were never all in the batch at once (", requests,
             " requests): give more --tokens");
    Level level;
    for (const auto &times : step_times)
        level.tokens += size_t(
            std::count_if(times.begin(), times.end(), [&](Clock::time_point t) { return t > begin && t <= end; }));
    level.window_s = ms_between(begin, end) / 1e3;
    level.cpu_s = (process_cpu_ms() - cpu_start) / 1e3;
    const BatchCounts stats = scheduler.counts();
    level.occupancy = stats.steps ? double(stats.request_steps) / double(stats.steps) : 0;
    return level;
}

} // namespace

nlohmann::json run_batch_bench(const BackendOptions &backend, const BatchBenchOptions &options) {
    if (options.decode_tokens < 4 || options.rounds < 1) fail("batch bench: need >= 4 tokens and >= 1 round");
    const Engine engine({options.weights, backend, components(Component::t3)});
    const t3::HParams &hp = engine.t3().hparams();
    std::mt19937_64 rng(1234);
    const RequestInputs inputs = request_inputs(hp, options.prompt_tokens, options.text_tokens, rng);
    const std::vector<int32_t> &text = inputs.text;
    Backend cond_backend(backend);
    const t3::CondEmbeddings cond = t3::encode_conditioning(engine.t3(), cond_backend, inputs.voice);

    nlohmann::json rows = nlohmann::json::array();
    for (int round = 0; round < options.rounds; ++round) {
        double single = 0;
        for (int requests : options.levels) {
            if (requests < 1) fail("batch bench: level ", requests, ", expected 1 or more");
            const Level level = run_level(engine, backend, options, cond, text, requests);
            const double rate = level.window_s > 0 ? double(level.tokens) / level.window_s : 0;
            if (requests == 1) single = rate;
            nlohmann::json row{{"requests", requests},   {"round", round},       {"window_s", level.window_s},
                               {"tokens", level.tokens}, {"tokens_per_s", rate}, {"mean_occupancy", level.occupancy},
                               {"cpu_s", level.cpu_s}};
            if (single > 0) row["ratio_to_single"] = rate / single;
            rows.push_back(row);
        }
    }
    return rows;
}

} // namespace chatterbox::bench
