#pragma once
// Chinese word segmentation for the multilingual tokenizer. The reference (tokenizer.py
// ChineseCangjieConverter) cuts the text with spacy_pkuseg and joins the words with spaces, which
// become "[SPACE]" tokens between words. pkuseg is a Python package with its own model; the nearest
// segmenter packaged for C++ here is jieba's (cppjieba, with jieba's dictionary and HMM model, from
// the npm package nodejieba: scripts/fetch_cppjieba.sh). Its words are jieba's, not pkuseg's: the
// two dictionaries and methods (jieba: the most probable path through a 349k-word dictionary, an HMM
// for runs of characters it lacks; pkuseg: a CRF model trained on news text) disagree on some words.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace chatterbox::text {

class WordSegmenter {
  public:
    virtual ~WordSegmenter() = default;
    // The words of text (valid UTF-8) in order, whitespace left out (pkuseg returns none).
    virtual std::vector<std::string> cut(std::string_view text) const = 0;
};

// jieba's default cut (MixSegment: dictionary path, HMM for unknown words) with the dictionary of
// `dict_dir` (jieba.dict.utf8, hmm_model.utf8); throws Error naming a missing or unreadable file.
std::unique_ptr<WordSegmenter> jieba_segmenter(const std::string &dict_dir);
// The folder jieba's dictionary is read from: $CHATTERBOX_JIEBA_DICT_DIR where set (a container image),
// else the build's (CHATTERBOX_JIEBA_DICT_DIR at configure time).
std::string jieba_dict_dir();
// jieba_segmenter(jieba_dict_dir()), loaded on first use (about 0.5 s) and shared; throws Error when
// the dictionary is missing (and again on the next call).
const WordSegmenter &chinese_segmenter();

// The words of text joined by single spaces: tokenizer.py's " ".join(segmenter.cut(text)).
std::string segmented(std::string_view text, const WordSegmenter &segmenter);

} // namespace chatterbox::text
