#pragma once
// BPE tokenizer reading a Hugging Face `tokenizer.json`, encoding like `tokenizers.Tokenizer.encode(text).ids`,
// and the Chatterbox English front end on top of it (EnTokenizer, T3 start/stop framing).
//
// Supported subset of the tokenizer.json format (anything else is rejected with an Error naming it):
//   model: BPE with vocab, merges ("a b" strings or ["a", "b"] pairs), unk_token, continuing_subword_prefix,
//          end_of_word_suffix, fuse_unk, byte_fallback, ignore_merges; dropout must be null or 0;
//   added_tokens: matched leftmost-longest on the raw text before everything else, with single_word / lstrip /
//          rstrip; `normalized` tokens are matched in a second pass (identical here, as there is no normalizer);
//   normalizer: null;  pre_tokenizer: null, Whitespace (regex \w+|[^\w\s]+) or ByteLevel (GPT-2: its split
//          pattern, then every byte as one of 256 printable characters; add_prefix_space, use_regex);
//   post_processor: null or ByteLevel (it changes only offsets);  truncation, padding: null;
//   decoder: any (only EnTokenizer::decode() requires it to be null).
// A ByteLevel vocabulary needs no unk_token, but must hold all 256 byte characters.
// GPT-2's "slow" files (vocab.json + merges.txt + added tokens) load through from_folder.
// Text must be valid UTF-8 (else Error, like Python's strict decoding); it never crashes on arbitrary bytes.

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chatterbox::text {

class BpeTokenizer {
  public:
    static BpeTokenizer from_file(const std::string &path);
    // `source` names the JSON in error messages.
    static BpeTokenizer from_json(std::string_view json_text, const std::string &source);
    // A folder with tokenizer.json, or else GPT-2's files as transformers' AutoTokenizer reads them:
    // vocab.json, merges.txt, and the added tokens of tokenizer_config.json's added_tokens_decoder (or of
    // added_tokens.json and special_tokens_map.json when there is no tokenizer_config.json), with the
    // ByteLevel pre-tokenizer (add_prefix_space from tokenizer_config.json, false by default).
    static BpeTokenizer from_folder(const std::string &folder);
    // The tokenizer.json text of a tokenizer.json file, or the one from_folder reads or builds from
    // a folder (what a GGUF stores); throws as from_file / from_folder.
    static std::string json_document(const std::string &file_or_folder);

    BpeTokenizer(BpeTokenizer &&) noexcept;
    BpeTokenizer &operator=(BpeTokenizer &&) noexcept;
    ~BpeTokenizer();

    // HF `Tokenizer.encode(text).ids` (no post-processor, so no special tokens are added).
    std::vector<int32_t> encode(std::string_view text) const;

    // Added tokens first, then the model vocabulary (like HF token_to_id / id_to_token).
    std::optional<int32_t> token_to_id(std::string_view token) const;
    std::optional<std::string> id_to_token(int32_t id) const;

    size_t model_vocab_size() const { return vocab_.size(); }
    // Distinct ids of the model vocabulary and the added tokens (transformers' len(tokenizer)).
    size_t size() const;
    // "" when the JSON has no decoder.
    const std::string &decoder_type() const { return decoder_type_; }
    const std::string &source() const { return source_; }

  private:
    struct AddedToken {
        std::string content;
        int32_t id = 0;
        bool single_word = false;
        bool lstrip = false;
        bool rstrip = false;
        bool normalized = false;
    };
    struct Merge {
        uint32_t rank = 0;
        int32_t new_id = 0;
    };
    struct WordCache;

    BpeTokenizer();
    // The tokenizer.json document, already parsed (from_folder builds one from GPT-2's files).
    static BpeTokenizer from_document(const nlohmann::json &root, const std::string &source);
    void encode_piece(std::string_view piece, bool normalized_pass, std::vector<int32_t> &ids) const;
    void encode_text(std::string_view text, std::vector<int32_t> &ids) const;
    void encode_byte_level(std::string_view text, std::vector<int32_t> &ids) const;
    void encode_word(std::string_view word, std::vector<int32_t> &ids) const;
    std::vector<int32_t> merge_word(std::string_view word) const;

    std::string source_;
    std::unordered_map<std::string, int32_t> vocab_;
    std::unordered_map<int32_t, std::string> vocab_by_id_;
    std::unordered_map<uint64_t, Merge> merges_; // key: (left id << 32) | right id
    std::vector<AddedToken> added_tokens_;       // sorted by content length, longest first
    int32_t unk_id_ = 0;
    std::string continuing_subword_prefix_;
    std::string end_of_word_suffix_;
    bool fuse_unk_ = false;
    bool byte_fallback_ = false;
    bool ignore_merges_ = false;
    enum class PreTokenizer { none, whitespace, byte_level };
    PreTokenizer pre_tokenizer_ = PreTokenizer::none;
    bool add_prefix_space_ = false; // ByteLevel: a space before each segment that does not start with one
    bool split_pattern_ = true;     // ByteLevel use_regex: GPT-2's split pattern, else each segment whole
    std::string decoder_type_;
    std::unique_ptr<WordCache> cache_;
};

// Chatterbox's English tokenizer (chatterbox/models/tokenizers/tokenizer.py, EnTokenizer).
class EnTokenizer {
  public:
    // Throws unless the vocabulary holds "[START]" and "[STOP]" (the reference asserts this).
    explicit EnTokenizer(BpeTokenizer tokenizer);
    static EnTokenizer from_file(const std::string &path);

    // Every ' ' becomes the literal "[SPACE]", then BpeTokenizer::encode. Apply punc_norm first, as tts.py does.
    std::vector<int32_t> text_to_tokens(std::string_view text) const;

    // Reference decode: tokens concatenated with spaces removed, "[SPACE]" -> ' ', "[STOP]" and "[UNK]" dropped.
    // Throws for ids outside the vocabulary (HF would silently skip them).
    std::string decode(const std::vector<int32_t> &ids) const;

    const BpeTokenizer &bpe() const { return tokenizer_; }

  private:
    BpeTokenizer tokenizer_;
};

// T3 text input framing (tts.py): [start_token] + ids + [stop_token]; the defaults are T3Config's
// start_text_token / stop_text_token.
std::vector<int32_t> t3_text_tokens(const std::vector<int32_t> &ids, int32_t start_token = 255, int32_t stop_token = 0);

} // namespace chatterbox::text
