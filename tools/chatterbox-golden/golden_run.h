#pragma once
// A golden case run: the case parameters, where recorded inputs come from, where results go.
// Each stage computes with the engine and writes its arrays as .npy files named like the golden
// arrays of the official implementation (shared/golden/index.json). Later stages take their inputs
// from what earlier stages computed in the same run (computed()); only the recorded random draws
// come from the inputs folder (input()).

#include "core/npy.h"
#include "models/chatterbox/pipeline_model.h"
#include "models/chatterbox/synthesis_params.h"
#include "models/chatterbox/variant.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace chatterbox::golden {

// The "case" object of index.json.
struct GoldenCase {
    std::string name;
    Variant variant = Variant::english; // "variant" (absent: english; "mtl": multilingual)
    std::string text;
    std::string ref_wav; // relative to the inputs folder, or absolute
    // tokenizer.json, or a folder of GPT-2 tokenizer files; relative to the inputs folder, or
    // absolute. The case may follow the path with a description: "tokenizer/ (vocab.json, ...)".
    std::string tokenizer;
    // The variant's generate() defaults, then the case's exaggeration and cfg_weight and its
    // "generate_kwargs" (names of the synthesis parameter table), each checked against the table;
    // "language_id" is the language (multilingual).
    SynthesisParams params;
    std::string t3_model; // "t3_model": which T3 of a folder with several (ModelOpenOptions); "" the default
    uint64_t seed = 0;
    int n_teacher_forced = 0;
    int n_greedy = 0;

    static GoldenCase load(const std::string &path); // throws Error naming a missing/ill-typed field
};

class GoldenRun {
  public:
    GoldenRun(GoldenCase golden_case, std::string inputs_dir, std::string model_path, std::string out_dir,
              BackendOptions backend);

    const GoldenCase &golden_case() const { return case_; }
    const std::string &model_path() const { return model_path_; }
    const BackendOptions &backend_options() const { return backend_; } // the device and threads
    std::string input_path(const std::string &file) const; // inputs_dir/file; an absolute file as it is
    NpyArray input(const std::string &array_name) const;   // inputs_dir/<array_name>.npy
    void write(const std::string &array_name, const NpyArray &array);
    const std::set<std::string> &written() const { return written_; }
    // An array an earlier stage of this run wrote; throws Error when none did.
    const NpyArray &computed(const std::string &array_name) const;

    // An object several stages share (a loaded model and its session), made on first use and kept
    // for the rest of the run.
    template <class T> T &shared(const std::string &key, const std::function<std::unique_ptr<T>()> &make) {
        std::shared_ptr<void> &slot = shared_[key];
        if (!slot) slot = std::shared_ptr<T>(make());
        return *static_cast<T *>(slot.get());
    }

  private:
    GoldenCase case_;
    std::string inputs_dir_, model_path_, out_dir_;
    BackendOptions backend_;
    std::set<std::string> written_;
    std::map<std::string, NpyArray> computed_;
    std::map<std::string, std::shared_ptr<void>> shared_;
};

// The engine a stage computes with, on the run's model and backend options; throws Error when the model is
// not of the case's variant.
std::unique_ptr<PipelineModel> load_engine(const GoldenRun &run, Components components);

// One stage: the arrays it produces and how.
struct Stage {
    std::string name;
    std::vector<std::string> produces;
    std::function<void(GoldenRun &)> run;
};

} // namespace chatterbox::golden
