#include "batch_bench.h"

#include "core/error.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/t3/batch.h"
#include "models/chatterbox/t3/embeddings.h"
#include "request_inputs.h"
#include "timing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

namespace chatterbox::bench {

namespace {

struct Level {
    double window_s = 0, cpu_s = 0, occupancy = 0;
    size_t tokens = 0;
    double decode_ms = 0, sample_ms = 0, prefill_s = 0; // per batch step; prefill parts in all
};

// A newcomer's prefill into the running batch: how long it took, and the running requests' median
// step before it against their longest step while it prefilled and joined.
struct Join {
    double prefill_ms = 0, median_step_ms = 0, longest_step_ms = 0;
};

// The running requests' steps around a newcomer that started at `start` and whose steps are
// `newcomer`: the median gap before `start` (the first gap, the warm-up's, left out) and the longest
// gap overlapping its prefill and its first step in the batch (start .. newcomer[1]).
Join join_stall(const std::vector<std::vector<Clock::time_point>> &running, Clock::time_point start,
                const std::vector<Clock::time_point> &newcomer) {
    if (newcomer.size() < 2) fail("batch bench: the newcomer took fewer than 2 steps");
    Join join;
    join.prefill_ms = ms_between(start, newcomer[0]);
    std::vector<double> before;
    for (const auto &times : running)
        for (size_t i = 2; i < times.size(); ++i) {
            const double gap = ms_between(times[i - 1], times[i]);
            if (times[i] <= start)
                before.push_back(gap);
            else if (times[i - 1] < newcomer[1])
                join.longest_step_ms = std::max(join.longest_step_ms, gap);
        }
    if (before.empty()) fail("batch bench: no step before the newcomer: give more --tokens");
    join.median_step_ms = spread_of(before).median;
    return join;
}

// `requests` requests decode in one batch; with `late_joiner`, one more starts its prefill once
// the first has taken a third of its tokens, and joins.
Level run_level(const PipelineModel &engine, const BackendOptions &backend, const BatchBenchArguments &options,
                const t3::CondEmbeddings &cond, const std::vector<int32_t> &text, int requests, Join *late_joiner) {
    const t3::HParams &hp = engine.t3().hparams();
    const int total = requests + (late_joiner ? 1 : 0);
    t3::RuntimeOptions runtime;
    runtime.kv_type = t3::kv_cache_type(options.kv_cache);
    t3::BatchOptions batch_options;
    batch_options.runtime = runtime;
    batch_options.max_sequences = total;
    batch_options.capacity = t3::prefill_length(hp, cond, text) + options.decode_tokens + 1;
    t3::T3Batch scheduler(engine.t3(), backend, batch_options);
    std::vector<std::vector<Clock::time_point>> step_times(static_cast<size_t>(total));
    std::atomic<int> first_request_steps{0};
    const double cpu_start = process_cpu_ms();
    auto run_request = [&](int r) {
        Backend request_backend(backend); // holds the session's KV cache; its prefill runs on the batch's
        t3::T3Session session(engine.t3(), request_backend, runtime);
        std::mt19937_64 rng(uint64_t(r) + 1);
        std::uniform_int_distribution<int32_t> unit(0, hp.speech_token_limit - 1);
        t3::GenerationHooks hooks;
        for (int i = 0; i <= options.decode_tokens; ++i) hooks.forced_tokens.push_back(unit(rng));
        hooks.step_logits = false;
        std::vector<Clock::time_point> &times = step_times[size_t(r)];
        hooks.on_step = [&, r](const t3::StepRecord &) {
            times.push_back(Clock::now());
            if (r == 0) ++first_request_steps;
            return true;
        };
        t3::SamplingParams params;
        params.cfg_weight = options.cfg_weight;
        params.max_new_tokens = options.decode_tokens + 1;
        scheduler.generate(session, cond, text, params, hooks);
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < requests; ++r) threads.emplace_back(run_request, r);
    Clock::time_point join_start;
    if (late_joiner)
        threads.emplace_back([&] {
            while (first_request_steps.load() < options.decode_tokens / 3)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            join_start = Clock::now();
            run_request(requests);
        });
    for (std::thread &t : threads) t.join();
    if (late_joiner) {
        *late_joiner = join_stall({step_times.begin(), step_times.begin() + requests}, join_start, step_times.back());
        step_times.pop_back(); // the throughput window is the first `requests`' alone
    }
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
    const t3::BatchTimes times = scheduler.times();
    const double steps = double(std::max<uint64_t>(stats.steps, 1));
    level.decode_ms = times.decode_s * 1e3 / steps;
    level.sample_ms = times.sample_s * 1e3 / steps;
    level.prefill_s = times.prefill_s;
    return level;
}

} // namespace

nlohmann::json run_batch_bench(const BackendOptions &backend, const BatchBenchArguments &options) {
    if (options.decode_tokens < 4 || options.rounds < 1) fail("batch bench: need >= 4 tokens and >= 1 round");
    const PipelineModel engine({options.weights, backend, components(Component::t3)});
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
            const Level level = run_level(engine, backend, options, cond, text, requests, nullptr);
            const double rate = level.window_s > 0 ? double(level.tokens) / level.window_s : 0;
            if (requests == 1) single = rate;
            nlohmann::json row{{"requests", requests},
                               {"round", round},
                               {"window_s", level.window_s},
                               {"tokens", level.tokens},
                               {"tokens_per_s", rate},
                               {"mean_occupancy", level.occupancy},
                               {"cpu_s", level.cpu_s},
                               {"decode_ms_per_step", level.decode_ms},
                               {"sample_ms_per_step", level.sample_ms},
                               {"prefill_s", level.prefill_s},
                               {"kv_cache", options.kv_cache}};
            if (single > 0) row["ratio_to_single"] = rate / single;
            if (options.late_joiner) {
                Join join;
                run_level(engine, backend, options, cond, text, requests, &join);
                row["join"] = {{"prefill_ms", join.prefill_ms},
                               {"median_step_ms", join.median_step_ms},
                               {"longest_step_ms", join.longest_step_ms},
                               {"longest_in_steps", join.longest_step_ms / join.median_step_ms}};
            }
            rows.push_back(row);
        }
    }
    return rows;
}

} // namespace chatterbox::bench
