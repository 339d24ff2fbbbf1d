#include "golden_run.h"

#include "core/error.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace chatterbox::golden {

namespace {

template <class T> T field(const nlohmann::json &j, const std::string &key, const std::string &path) {
    if (!j.contains(key)) fail(path, ": case has no field '", key, "'");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception &e) {
        fail(path, ": case field '", key, "' has the wrong type (", e.what(), ")");
    }
}

} // namespace

GoldenCase GoldenCase::load(const std::string &path) {
    std::ifstream in(path);
    if (!in) fail("cannot open case file ", path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception &e) {
        fail(path, ": not valid JSON (", e.what(), ")");
    }
    if (j.contains("case") && j["case"].is_object()) j = j["case"]; // a whole index.json works too
    GoldenCase c;
    c.name = j.value("name", "case");
    c.text = field<std::string>(j, "text", path);
    c.ref_wav = field<std::string>(j, "ref_wav", path);
    c.tokenizer = field<std::string>(j, "tokenizer", path);
    c.seed = field<uint64_t>(j, "seed", path);
    c.exaggeration = field<float>(j, "exaggeration", path);
    c.cfg_weight = field<float>(j, "cfg_weight", path);
    c.n_teacher_forced = field<int>(j, "n_teacher_forced", path);
    c.n_greedy = field<int>(j, "n_greedy", path);
    if (c.n_teacher_forced < 0 || c.n_greedy < 0) fail(path, ": n_teacher_forced and n_greedy must be >= 0");
    return c;
}

GoldenRun::GoldenRun(GoldenCase golden_case, std::string inputs_dir, std::string model_path, std::string out_dir,
                     int threads)
    : case_(std::move(golden_case)), inputs_dir_(std::move(inputs_dir)), model_path_(std::move(model_path)),
      out_dir_(std::move(out_dir)), threads_(threads) {
    std::filesystem::create_directories(out_dir_);
}

std::string GoldenRun::input_path(const std::string &file) const {
    return std::filesystem::path(file).is_absolute() ? file : inputs_dir_ + "/" + file;
}

NpyArray GoldenRun::input(const std::string &array_name) const { return read_npy(input_path(array_name + ".npy")); }

void GoldenRun::write(const std::string &array_name, const NpyArray &array) {
    write_npy(out_dir_ + "/" + array_name + ".npy", array);
    written_.insert(array_name);
    computed_[array_name] = array;
}

const NpyArray &GoldenRun::computed(const std::string &array_name) const {
    const auto it = computed_.find(array_name);
    if (it == computed_.end())
        fail("needs ", array_name,
             ", which no earlier stage of this run computed (its stage failed or was left out by --only)");
    return it->second;
}

} // namespace chatterbox::golden
