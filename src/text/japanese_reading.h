#pragma once
// The Japanese step of the multilingual tokenizer (tokenizer.py hiragana_normalize): kanji as their
// hiragana reading, kana and everything else as it is, then NFKD.
//
// The reference reads with pykakasi; this engine with KAKASI (libkakasi, the C program pykakasi's
// dictionary descends from), which differs in two ways:
//   * segments: pykakasi splits text into words and reads each; here a segment is a run of kanji
//     with the hiragana that follows it (the okurigana KAKASI needs to choose a reading, e.g.
//     食べる -> たべる, up to a small っ: KAKASI 2.3.6 loses a phrase read past it), read by KAKASI as one phrase.
//     Where the following hiragana is a particle KAKASI may read the phrase as a whole: 今日は -> こんにちは where
//     pykakasi gives きょう + は.
//   * dictionary: KAKASI's kanwadict, not pykakasi's; most common words read alike (漢字 かんじ,
//     日本語 にほんご, 東京 とうきょう, 大人 おとな).
// Measured on 244 sentences (tests/data/mtl/japanese_readings.tsv): 220 identical to pykakasi's;
// README.md's multilingual section lists the kinds of difference.
// As in the reference, a reading that starts with は or へ gets a space before it; a kanji that
// KAKASI cannot encode (outside JIS X 0208/0212) stays as it is.

#include <string>
#include <string_view>

namespace chatterbox::text {

// Throws Error for invalid UTF-8, or when KAKASI (opened at run time: libkakasi.so.2) or its
// dictionary cannot be opened.
std::string japanese_hiragana(std::string_view text);

} // namespace chatterbox::text
