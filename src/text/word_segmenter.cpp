#include "text/word_segmenter.h"

#include "core/error.h"

#include <cppjieba/MixSegment.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace chatterbox::text {

namespace {

class JiebaSegmenter : public WordSegmenter {
  public:
    JiebaSegmenter(const std::string &dictionary, const std::string &hmm_model) : segment_(dictionary, hmm_model) {}

    std::vector<std::string> cut(std::string_view text) const override {
        std::vector<std::string> words;
        segment_.Cut(std::string(text), words, true);
        std::vector<std::string> out;
        for (std::string &word : words)
            if (word.find_first_not_of(" \t\r\n\f\v") != std::string::npos) out.push_back(std::move(word));
        return out;
    }

  private:
    cppjieba::MixSegment segment_;
};

} // namespace

std::unique_ptr<WordSegmenter> jieba_segmenter(const std::string &dict_dir) {
    // cppjieba aborts the process on a file it cannot open: check first.
    std::vector<std::string> paths;
    for (const char *file : {"jieba.dict.utf8", "hmm_model.utf8"}) {
        const std::string path = (std::filesystem::path(dict_dir) / file).string();
        if (!std::ifstream(path).is_open())
            fail("Chinese word segmentation: cannot read jieba's ", file, " at ", path,
                 " (scripts/fetch_cppjieba.sh lays it out; the build reads it from CHATTERBOX_JIEBA_DICT_DIR, and so "
                 "does the program where that environment variable is set)");
        paths.push_back(path);
    }
    return std::make_unique<JiebaSegmenter>(paths[0], paths[1]);
}

std::string jieba_dict_dir() {
    // A container image keeps the dictionary elsewhere than the build tree the program was built in.
    const char *moved = std::getenv("CHATTERBOX_JIEBA_DICT_DIR");
    return moved && moved[0] ? moved : CHATTERBOX_JIEBA_DICT_DIR;
}

const WordSegmenter &chinese_segmenter() {
    static std::mutex mutex;
    static std::unique_ptr<WordSegmenter> segmenter;
    const std::lock_guard<std::mutex> lock(mutex);
    if (!segmenter) segmenter = jieba_segmenter(jieba_dict_dir());
    return *segmenter;
}

std::string segmented(std::string_view text, const WordSegmenter &segmenter) {
    std::string out;
    for (const std::string &word : segmenter.cut(text)) out += (out.empty() ? "" : " ") + word;
    return out;
}

} // namespace chatterbox::text
