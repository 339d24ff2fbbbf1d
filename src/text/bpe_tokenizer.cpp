#include "text/bpe_tokenizer.h"

#include "core/error.h"
#include "text/unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <queue>
#include <sstream>

namespace chatterbox::text {

using nlohmann::json;

// Per-word results, as HF's BPE cache: words shorter than kMaxCachedWordBytes, at most kCapacity of them
// (once full, new words are simply not cached).
struct BpeTokenizer::WordCache {
    static constexpr size_t kCapacity = 10000;
    static constexpr size_t kMaxCachedWordBytes = 256;
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>> words;
};

namespace {

// How a JSON value is named in errors: the "type" of a component object, else the JSON itself (shortened).
std::string describe(const json &value) {
    if (value.is_object() && value.contains("type") && value["type"].is_string()) {
        return "of type '" + value["type"].get<std::string>() + "'";
    }
    std::string dumped = value.dump();
    if (dumped.size() > 80) dumped = dumped.substr(0, 77) + "...";
    return dumped;
}

bool is_type(const json &component, const char *type) {
    return component.is_object() && component.value("type", json()) == type;
}

// GPT-2's bytes_to_unicode: the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for themselves, the other
// 68 are U+0100 onwards in byte order; returned as UTF-8.
const std::string &byte_character(uint8_t byte) {
    static const std::vector<std::string> characters = [] {
        std::vector<std::string> table(256);
        char32_t next_unprintable = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            append_utf8(table[size_t(b)], printable ? char32_t(b) : next_unprintable++);
        }
        return table;
    }();
    return characters[byte];
}

// The field `key` of `object`, or nullptr when absent.
const json *find_field(const json &object, const char *key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

bool is_null_or_absent(const json *value) { return value == nullptr || value->is_null(); }

bool read_bool(const json &object, const char *key, bool fallback, const std::string &where) {
    const json *value = find_field(object, key);
    if (is_null_or_absent(value)) return fallback;
    if (!value->is_boolean()) fail(where, ".", key, ": expected a boolean, got ", describe(*value));
    return value->get<bool>();
}

std::string read_optional_string(const json &object, const char *key, const std::string &where) {
    const json *value = find_field(object, key);
    if (is_null_or_absent(value)) return {};
    if (!value->is_string()) fail(where, ".", key, ": expected a string or null, got ", describe(*value));
    return value->get<std::string>();
}

int32_t read_id(const json &value, const std::string &where) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
        fail(where, ": expected a token id in [0, 2^31), got ", describe(value));
    }
    return static_cast<int32_t>(value.get<int64_t>());
}

uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Where the code point ending just before byte `offset` (> 0) of valid UTF-8 `text` starts.
size_t code_point_start_before(std::string_view text, size_t offset) {
    size_t start = offset - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    return start;
}

char32_t code_point_before(std::string_view text, size_t offset) {
    return decode_utf8_at(text, code_point_start_before(text, offset), "tokenizer").value;
}

// End of the match of GPT-2's split pattern at `start` (< text.size()) of valid UTF-8 text:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (tokenizers' ByteLevel pre-tokenizer; the alternatives are tried in this order at every match start).
size_t gpt2_match_end(std::string_view text, size_t start) {
    enum class Kind { letter, number, space, other };
    const auto kind_at = [&](size_t offset, size_t *size) {
        const CodePoint cp = decode_utf8_at(text, offset, "tokenizer");
        if (size) *size = cp.size;
        if (is_letter(cp.value)) return Kind::letter;
        if (is_number(cp.value)) return Kind::number;
        return is_regex_space(cp.value) ? Kind::space : Kind::other;
    };
    const auto run_end = [&](size_t offset, Kind kind) {
        size_t size = 0;
        while (offset < text.size() && kind_at(offset, &size) == kind) offset += size;
        return offset;
    };
    if (text[start] == '\'') {
        for (std::string_view suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
            if (text.compare(start + 1, suffix.size(), suffix) == 0) return start + 1 + suffix.size();
        }
    }
    size_t first_size = 0;
    const Kind first = kind_at(start, &first_size);
    size_t word = start; // where the letter, number or other run begins: after an optional ' '
    if (text[start] == ' ' && start + 1 < text.size() && kind_at(start + 1, nullptr) != Kind::space) word = start + 1;
    const Kind kind = word == start ? first : kind_at(word, nullptr);
    if (kind != Kind::space) return run_end(word, kind);
    // \s+(?!\S): a whitespace run up to the end, or all of it but the character before the next non-space;
    // a single whitespace character before a non-space falls to \s+.
    const size_t end = run_end(start, Kind::space);
    if (end == text.size() || end == start + first_size) return end;
    return code_point_start_before(text, end);
}

// Byte offset where the trailing run of \s characters of text[from, to) begins (Rust regex `\s*$`).
size_t trailing_space_start(std::string_view text, size_t from, size_t to) {
    size_t run_start = from;
    for (size_t offset = from; offset < to;) {
        const CodePoint cp = decode_utf8_at(text, offset, "tokenizer");
        offset += cp.size;
        if (!is_regex_space(cp.value)) run_start = offset;
    }
    return run_start;
}

// Byte length of the leading run of \s characters of text[from, ...) (Rust regex `^\s*`).
size_t leading_space_length(std::string_view text, size_t from) {
    size_t offset = from;
    while (offset < text.size()) {
        const CodePoint cp = decode_utf8_at(text, offset, "tokenizer");
        if (!is_regex_space(cp.value)) break;
        offset += cp.size;
    }
    return offset - from;
}

// HF's BPE merge loop (tokenizers/src/models/bpe/word.rs, Word::merge_all): a min-heap of candidate merges ordered
// by (rank, position); stale entries are detected by re-checking the pair's merge result.
struct Symbol {
    int32_t id;
    int prev;
    int next;
    bool removed;
};

struct MergeCandidate {
    uint32_t rank;
    int pos;
    int32_t new_id;
};

struct LaterCandidate {
    bool operator()(const MergeCandidate &a, const MergeCandidate &b) const {
        return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    }
};

} // namespace

BpeTokenizer::BpeTokenizer() : cache_(std::make_unique<WordCache>()) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer &&) noexcept = default;
BpeTokenizer &BpeTokenizer::operator=(BpeTokenizer &&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

namespace {

std::string read_text_file(const std::string &path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) fail("tokenizer: cannot open '", path, "'");
    std::ostringstream content;
    content << file.rdbuf();
    if (file.bad()) fail("tokenizer: cannot read '", path, "'");
    return content.str();
}

json read_json_file(const std::string &path) {
    try {
        return json::parse(read_text_file(path));
    } catch (const json::exception &error) {
        fail(path, ": invalid JSON: ", error.what());
    }
}

bool is_file(const std::string &path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec);
}

// merges.txt: an optional "#version" line, then one "left right" merge per line.
json read_merges(const std::string &path) {
    std::istringstream lines(read_text_file(path));
    json merges = json::array();
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (merges.empty() && line.rfind("#version", 0) == 0)) continue;
        merges.push_back(line);
    }
    return merges;
}

// The added tokens as tokenizer.json lists them: tokenizer_config.json's added_tokens_decoder (id -> content
// and flags), else added_tokens.json (content -> id) and special_tokens_map.json's special tokens.
json read_added_tokens(const std::string &folder, const json *config) {
    json added = json::array();
    if (config) {
        if (const json *decoder = find_field(*config, "added_tokens_decoder"); !is_null_or_absent(decoder)) {
            if (!decoder->is_object()) fail(folder, "/tokenizer_config.json: added_tokens_decoder is not an object");
            for (const auto &[id, token] : decoder->items()) {
                json entry = token;
                if (!entry.is_object())
                    fail(folder, "/tokenizer_config.json: added_tokens_decoder[", id, "] is not an object");
                try {
                    entry["id"] = std::stoll(id);
                } catch (const std::exception &) {
                    fail(folder, "/tokenizer_config.json: added_tokens_decoder key '", id, "' is not a token id");
                }
                added.push_back(entry);
            }
            return added;
        }
    }
    if (const std::string path = folder + "/added_tokens.json"; is_file(path)) {
        const json tokens = read_json_file(path);
        if (!tokens.is_object()) fail(path, ": expected an object of token -> id");
        for (const auto &[content, id] : tokens.items()) added.push_back({{"content", content}, {"id", id}});
    }
    if (const std::string path = folder + "/special_tokens_map.json"; is_file(path)) {
        const json map = read_json_file(path); // items() of a temporary would outlive it in the loop
        for (const auto &[role, token] : map.items()) {
            const json content = token.is_object() ? token.value("content", json()) : token;
            if (content.is_string()) added.push_back({{"content", content}, {"special", true}});
        }
    }
    return added;
}

// The tokenizer.json document of GPT-2's files in folder, as transformers' AutoTokenizer reads them.
json gpt2_document(const std::string &folder) {
    for (const char *required : {"vocab.json", "merges.txt"}) {
        if (!is_file(folder + "/" + required)) {
            fail("tokenizer: '", folder, "' has neither tokenizer.json nor GPT-2's ", required);
        }
    }
    json config;
    const bool has_config = is_file(folder + "/tokenizer_config.json");
    if (has_config) config = read_json_file(folder + "/tokenizer_config.json");
    if (has_config && !config.is_object()) fail(folder, "/tokenizer_config.json: expected a JSON object");
    const std::string where = folder + "/tokenizer_config.json";
    return {
        {"model",
         {{"type", "BPE"},
          {"vocab", read_json_file(folder + "/vocab.json")},
          {"merges", read_merges(folder + "/merges.txt")}}},
        {"pre_tokenizer",
         {{"type", "ByteLevel"},
          {"add_prefix_space", has_config ? read_bool(config, "add_prefix_space", false, where) : false},
          {"use_regex", true}}},
        {"added_tokens", read_added_tokens(folder, has_config ? &config : nullptr)},
    };
}

} // namespace

BpeTokenizer BpeTokenizer::from_file(const std::string &path) { return from_json(read_text_file(path), path); }

BpeTokenizer BpeTokenizer::from_folder(const std::string &folder) {
    if (const std::string path = folder + "/tokenizer.json"; is_file(path)) return from_file(path);
    return from_document(gpt2_document(folder), folder + " (GPT-2 vocab.json + merges.txt)");
}

std::string BpeTokenizer::json_document(const std::string &file_or_folder) {
    if (is_file(file_or_folder)) return read_text_file(file_or_folder);
    if (const std::string path = file_or_folder + "/tokenizer.json"; is_file(path)) return read_text_file(path);
    return gpt2_document(file_or_folder).dump();
}

BpeTokenizer BpeTokenizer::from_json(std::string_view json_text, const std::string &source) {
    json root;
    try {
        root = json::parse(json_text);
    } catch (const json::exception &error) {
        fail(source, ": invalid JSON: ", error.what());
    }
    return from_document(root, source);
}

BpeTokenizer BpeTokenizer::from_document(const nlohmann::json &root, const std::string &source) {
    if (!root.is_object()) fail(source, ": expected a JSON object at the top level, got ", describe(root));

    BpeTokenizer tokenizer;
    tokenizer.source_ = source;

    // Pipeline components: only what Chatterbox's tokenizer files use is implemented.
    for (const char *key : {"normalizer", "truncation", "padding"}) {
        const json *value = find_field(root, key);
        if (!is_null_or_absent(value)) fail(source, ": ", key, " ", describe(*value), " is not supported (only null)");
    }
    if (const json *post = find_field(root, "post_processor");
        !is_null_or_absent(post) && !is_type(*post, "ByteLevel")) {
        fail(source, ": post_processor ", describe(*post), " is not supported (only ByteLevel or null)");
    }
    if (const json *pre = find_field(root, "pre_tokenizer"); !is_null_or_absent(pre)) {
        const std::string where = source + ": pre_tokenizer";
        if (is_type(*pre, "Whitespace")) {
            tokenizer.pre_tokenizer_ = PreTokenizer::whitespace;
        } else if (is_type(*pre, "ByteLevel")) {
            tokenizer.pre_tokenizer_ = PreTokenizer::byte_level;
            tokenizer.add_prefix_space_ = read_bool(*pre, "add_prefix_space", true, where);
            tokenizer.split_pattern_ = read_bool(*pre, "use_regex", true, where);
        } else {
            fail(where, " ", describe(*pre), " is not supported (only Whitespace, ByteLevel or null)");
        }
    }
    if (const json *decoder = find_field(root, "decoder"); !is_null_or_absent(decoder)) {
        tokenizer.decoder_type_ = describe(*decoder);
    }

    // The BPE model.
    const json *model = find_field(root, "model");
    if (model == nullptr || !model->is_object()) fail(source, ": missing the \"model\" object");
    const std::string where = source + ": model";
    if (const json *type = find_field(*model, "type"); type != nullptr && *type != "BPE") {
        fail(where, ".type ", describe(*type), " is not supported (only BPE)");
    }
    if (const json *dropout = find_field(*model, "dropout"); !is_null_or_absent(dropout)) {
        if (!dropout->is_number() || dropout->get<double>() != 0.0) {
            fail(where, ".dropout ", describe(*dropout), " is not supported (BPE dropout makes encoding random)");
        }
    }
    tokenizer.continuing_subword_prefix_ = read_optional_string(*model, "continuing_subword_prefix", where);
    tokenizer.end_of_word_suffix_ = read_optional_string(*model, "end_of_word_suffix", where);
    tokenizer.fuse_unk_ = read_bool(*model, "fuse_unk", false, where);
    tokenizer.byte_fallback_ = read_bool(*model, "byte_fallback", false, where);
    tokenizer.ignore_merges_ = read_bool(*model, "ignore_merges", false, where);

    const json *vocab = find_field(*model, "vocab");
    if (vocab == nullptr || !vocab->is_object()) fail(where, ".vocab: missing or not an object");
    for (const auto &[token, id_value] : vocab->items()) {
        const int32_t id = read_id(id_value, where + ".vocab[\"" + token + "\"]");
        validate_utf8(token, where + ".vocab");
        const auto [existing, inserted] = tokenizer.vocab_by_id_.emplace(id, token);
        if (!inserted) fail(where, ".vocab: id ", id, " is given to both '", existing->second, "' and '", token, "'");
        tokenizer.vocab_.emplace(token, id);
    }

    // HF fails lazily when an unknown character meets a missing unk token, or silently drops unknown characters
    // without one; both are rejected here so that no text is ever encoded to silently wrong ids.
    // A ByteLevel vocabulary instead spells every text with its 256 byte characters.
    const std::string unk_token = read_optional_string(*model, "unk_token", where);
    if (tokenizer.pre_tokenizer_ == PreTokenizer::byte_level) {
        for (int byte = 0; byte < 256; ++byte) {
            if (tokenizer.vocab_.count(byte_character(uint8_t(byte))) == 0) {
                fail(where, ".vocab: the ByteLevel character '", byte_character(uint8_t(byte)), "' of byte ", byte,
                     " is missing (texts with that byte could not be encoded)");
            }
        }
    } else if (unk_token.empty()) {
        fail(where, ".unk_token: missing (characters outside the vocabulary would be dropped)");
    }
    if (!unk_token.empty()) {
        const auto unk = tokenizer.vocab_.find(unk_token);
        if (unk == tokenizer.vocab_.end()) fail(where, ".unk_token '", unk_token, "' is not in the vocabulary");
        tokenizer.unk_id_ = unk->second;
    }

    const json *merges = find_field(*model, "merges");
    if (merges == nullptr || !merges->is_array()) fail(where, ".merges: missing or not an array");
    const std::string &prefix = tokenizer.continuing_subword_prefix_;
    uint32_t rank = 0; // position among the merges proper (header lines do not count)
    for (size_t index = 0; index < merges->size(); ++index) {
        const json &merge = (*merges)[index];
        std::string left, right;
        if (merge.is_string()) {
            const std::string line = merge.get<std::string>();
            if (line.rfind("#version", 0) == 0) continue; // header line of legacy merges.txt content
            const size_t space = line.find(' ');
            if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
                fail(where, ".merges[", index, "]: expected \"left right\" (one space), got '", line, "'");
            }
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            left = merge[0].get<std::string>();
            right = merge[1].get<std::string>();
        } else {
            fail(where, ".merges[", index, "]: expected \"left right\" or [\"left\", \"right\"], got ",
                 describe(merge));
        }
        // The merged token drops the right part's continuing-subword prefix.
        if (!prefix.empty() && right.compare(0, prefix.size(), prefix) != 0) {
            fail(where, ".merges[", index, "]: '", right, "' lacks the continuing_subword_prefix '", prefix, "'");
        }
        const std::string merged = left + right.substr(prefix.size());
        int32_t ids[3] = {};
        const std::string *parts[3] = {&left, &right, &merged};
        for (int i = 0; i < 3; ++i) {
            const auto found = tokenizer.vocab_.find(*parts[i]);
            if (found == tokenizer.vocab_.end()) {
                fail(where, ".merges[", index, "] '", left, " ", right, "': '", *parts[i],
                     "' is not in the vocabulary");
            }
            ids[i] = found->second;
        }
        // A repeated pair keeps its last rank, as HF's map insertion does.
        tokenizer.merges_[pair_key(ids[0], ids[1])] = Merge{rank, ids[2]};
        ++rank;
    }

    // Added tokens: the id of a token already in the model vocabulary wins over the JSON id (as in HF).
    if (const json *added = find_field(root, "added_tokens"); !is_null_or_absent(added)) {
        if (!added->is_array()) fail(source, ": added_tokens: expected an array, got ", describe(*added));
        for (size_t i = 0; i < added->size(); ++i) {
            const json &entry = (*added)[i];
            const std::string at = concat(source, ": added_tokens[", i, "]");
            if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string()) {
                fail(at, ": expected an object with a string \"content\", got ", describe(entry));
            }
            AddedToken token;
            token.content = entry["content"].get<std::string>();
            if (token.content.empty()) continue; // HF ignores empty added tokens
            validate_utf8(token.content, at);
            const bool special = read_bool(entry, "special", false, at);
            token.single_word = read_bool(entry, "single_word", false, at);
            token.lstrip = read_bool(entry, "lstrip", false, at);
            token.rstrip = read_bool(entry, "rstrip", false, at);
            token.normalized = read_bool(entry, "normalized", !special, at);
            if (const auto in_vocab = tokenizer.vocab_.find(token.content); in_vocab != tokenizer.vocab_.end()) {
                token.id = in_vocab->second;
            } else {
                const json *id = find_field(entry, "id");
                if (id == nullptr) fail(at, ": '", token.content, "' has no id and is not in the model vocabulary");
                token.id = read_id(*id, at + ".id");
                if (const auto clash = tokenizer.vocab_by_id_.find(token.id); clash != tokenizer.vocab_by_id_.end()) {
                    fail(at, ": id ", token.id, " of '", token.content, "' belongs to the vocabulary token '",
                         clash->second, "'");
                }
            }
            for (const AddedToken &other : tokenizer.added_tokens_) {
                if (other.id == token.id && other.content != token.content) {
                    fail(at, ": id ", token.id, " is given to both '", other.content, "' and '", token.content, "'");
                }
            }
            auto same = std::find_if(tokenizer.added_tokens_.begin(), tokenizer.added_tokens_.end(),
                                     [&](const AddedToken &other) { return other.content == token.content; });
            if (same != tokenizer.added_tokens_.end()) {
                *same = token; // a repeated content keeps its last settings
            } else {
                tokenizer.added_tokens_.push_back(token);
            }
        }
    }
    std::stable_sort(tokenizer.added_tokens_.begin(), tokenizer.added_tokens_.end(),
                     [](const AddedToken &a, const AddedToken &b) { return a.content.size() > b.content.size(); });
    return tokenizer;
}

size_t BpeTokenizer::size() const {
    size_t count = vocab_by_id_.size();
    for (const AddedToken &added : added_tokens_) count += vocab_by_id_.count(added.id) == 0 ? 1 : 0;
    return count;
}

std::optional<int32_t> BpeTokenizer::token_to_id(std::string_view token) const {
    for (const AddedToken &added : added_tokens_) {
        if (added.content == token) return added.id;
    }
    const auto found = vocab_.find(std::string(token));
    if (found == vocab_.end()) return std::nullopt;
    return found->second;
}

std::optional<std::string> BpeTokenizer::id_to_token(int32_t id) const {
    for (const AddedToken &added : added_tokens_) {
        if (added.id == id) return added.content;
    }
    const auto found = vocab_by_id_.find(id);
    if (found == vocab_by_id_.end()) return std::nullopt;
    return found->second;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
    validate_utf8(text, source_ + ": encode");
    std::vector<int32_t> ids;
    // First pass: tokens matched on the raw text; second pass: `normalized` tokens, matched on the normalised
    // remainder (HF AddedVocabulary::extract_and_normalize; there is no normalizer, so the text is unchanged).
    encode_piece(text, false, ids);
    return ids;
}

// HF AddedVocabulary::find_matches: leftmost-longest, non-overlapping matches of this pass's added tokens; a
// single_word token not delimited by non-word characters is skipped; lstrip / rstrip absorb adjacent whitespace.
void BpeTokenizer::encode_piece(std::string_view piece, bool normalized_pass, std::vector<int32_t> &ids) const {
    const auto encode_gap = [&](size_t begin, size_t end) {
        if (begin >= end) return;
        if (normalized_pass) {
            encode_text(piece.substr(begin, end - begin), ids);
        } else {
            encode_piece(piece.substr(begin, end - begin), true, ids);
        }
    };
    size_t gap_start = 0;
    size_t pos = 0;
    while (pos < piece.size()) {
        const AddedToken *match = nullptr;
        for (const AddedToken &token : added_tokens_) { // longest first
            if (token.normalized == normalized_pass && piece.compare(pos, token.content.size(), token.content) == 0) {
                match = &token;
                break;
            }
        }
        if (match == nullptr) {
            ++pos;
            continue;
        }
        // The search resumes after the match itself, even when rstrip absorbs more (as HF's Aho-Corasick iterator).
        size_t start = pos;
        size_t stop = pos + match->content.size();
        pos = stop;
        if (match->single_word) {
            const bool word_before = start > 0 && is_regex_word(code_point_before(piece, start));
            const bool word_after =
                stop < piece.size() && is_regex_word(decode_utf8_at(piece, stop, "tokenizer").value);
            if (word_before || word_after) continue;
        }
        if (match->lstrip) start = trailing_space_start(piece, gap_start, start);
        if (match->rstrip) stop += leading_space_length(piece, stop);
        encode_gap(gap_start, start);
        ids.push_back(match->id);
        gap_start = stop;
    }
    encode_gap(gap_start, piece.size());
}

// Pre-tokenizer (Whitespace: runs of \w, runs of other non-space characters; whitespace dropped), then the model.
void BpeTokenizer::encode_text(std::string_view text, std::vector<int32_t> &ids) const {
    if (pre_tokenizer_ == PreTokenizer::byte_level) {
        encode_byte_level(text, ids);
        return;
    }
    if (pre_tokenizer_ == PreTokenizer::none) {
        encode_word(text, ids);
        return;
    }
    for (size_t offset = 0; offset < text.size();) {
        CodePoint cp = decode_utf8_at(text, offset, "tokenizer");
        if (is_regex_space(cp.value)) {
            offset += cp.size;
            continue;
        }
        const bool word = is_regex_word(cp.value); // \w and \s never overlap
        const size_t start = offset;
        for (offset += cp.size; offset < text.size(); offset += cp.size) {
            cp = decode_utf8_at(text, offset, "tokenizer");
            if (is_regex_space(cp.value) || is_regex_word(cp.value) != word) break;
        }
        encode_word(text.substr(start, offset - start), ids);
    }
}

// ByteLevel: an optional leading space, GPT-2's split pattern, then each piece's bytes as their characters.
void BpeTokenizer::encode_byte_level(std::string_view text, std::vector<int32_t> &ids) const {
    std::string prefixed;
    if (add_prefix_space_ && text.front() != ' ') {
        prefixed = " " + std::string(text);
        text = prefixed;
    }
    std::string word;
    for (size_t start = 0; start < text.size();) {
        const size_t end = split_pattern_ ? gpt2_match_end(text, start) : text.size();
        word.clear();
        for (size_t i = start; i < end; ++i) word += byte_character(static_cast<uint8_t>(text[i]));
        encode_word(word, ids);
        start = end;
    }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t> &ids) const {
    if (word.empty()) return;
    if (ignore_merges_) {
        if (const auto whole = vocab_.find(std::string(word)); whole != vocab_.end()) {
            ids.push_back(whole->second);
            return;
        }
    }
    const bool cacheable = word.size() < WordCache::kMaxCachedWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        const auto hit = cache_->words.find(std::string(word));
        if (hit != cache_->words.end()) {
            ids.insert(ids.end(), hit->second.begin(), hit->second.end());
            return;
        }
    }
    std::vector<int32_t> word_ids = merge_word(word);
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        if (cache_->words.size() < WordCache::kCapacity) cache_->words.emplace(std::string(word), std::move(word_ids));
    }
}

// HF BPE::merge_word: one symbol per character (with prefix / suffix, byte fallback or [UNK]), then merge_all.
std::vector<int32_t> BpeTokenizer::merge_word(std::string_view word) const {
    std::vector<Symbol> symbols;
    const auto add = [&](int32_t id) {
        const int index = static_cast<int>(symbols.size());
        if (index > 0) symbols.back().next = index;
        symbols.push_back(Symbol{id, index - 1, -1, false});
    };
    bool unk_pending = false;
    for (size_t offset = 0; offset < word.size();) {
        const size_t size = decode_utf8_at(word, offset, "tokenizer").size;
        std::string piece(word.substr(offset, size));
        if (offset > 0) piece = continuing_subword_prefix_ + piece;
        offset += size;
        if (offset == word.size()) piece += end_of_word_suffix_;

        if (const auto found = vocab_.find(piece); found != vocab_.end()) {
            if (unk_pending) add(unk_id_);
            unk_pending = false;
            add(found->second);
            continue;
        }
        if (byte_fallback_) {
            std::vector<int32_t> byte_ids;
            for (unsigned char byte : piece) {
                static constexpr char kHex[] = "0123456789ABCDEF";
                const std::string name = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
                const auto found_byte = vocab_.find(name);
                if (found_byte == vocab_.end()) break;
                byte_ids.push_back(found_byte->second);
            }
            if (byte_ids.size() == piece.size()) {
                // Like HF, a pending [UNK] is not flushed here: it lands after these byte tokens.
                for (int32_t id : byte_ids) add(id);
                continue;
            }
        }
        if (unk_pending && !fuse_unk_) add(unk_id_);
        unk_pending = true;
    }
    if (unk_pending) add(unk_id_);

    std::priority_queue<MergeCandidate, std::vector<MergeCandidate>, LaterCandidate> queue;
    const auto push_if_mergeable = [&](int pos) {
        const int next = symbols[pos].next;
        if (next < 0) return;
        const auto merge = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
        if (merge != merges_.end()) queue.push(MergeCandidate{merge->second.rank, pos, merge->second.new_id});
    };
    for (int pos = 0; pos + 1 < static_cast<int>(symbols.size()); ++pos) push_if_mergeable(pos);

    while (!queue.empty()) {
        const MergeCandidate top = queue.top();
        queue.pop();
        Symbol &left = symbols[top.pos];
        if (left.removed || left.next < 0) continue;
        const Symbol &right = symbols[left.next];
        const auto merge = merges_.find(pair_key(left.id, right.id));
        if (merge == merges_.end() || merge->second.new_id != top.new_id) continue; // stale entry

        const int after = right.next;
        symbols[left.next].removed = true;
        left.id = top.new_id;
        left.next = after;
        if (after >= 0) symbols[after].prev = top.pos;
        if (left.prev >= 0) push_if_mergeable(left.prev);
        push_if_mergeable(top.pos);
    }

    std::vector<int32_t> ids;
    for (const Symbol &symbol : symbols) {
        if (!symbol.removed) ids.push_back(symbol.id);
    }
    return ids;
}

EnTokenizer::EnTokenizer(BpeTokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {
    for (const char *required : {"[START]", "[STOP]"}) {
        if (!tokenizer_.token_to_id(required)) {
            fail(tokenizer_.source(), ": the vocabulary has no '", required, "' token (required by EnTokenizer)");
        }
    }
}

EnTokenizer EnTokenizer::from_file(const std::string &path) { return EnTokenizer(BpeTokenizer::from_file(path)); }

std::vector<int32_t> EnTokenizer::text_to_tokens(std::string_view text) const {
    return tokenizer_.encode(replace_all(text, " ", "[SPACE]"));
}

std::string EnTokenizer::decode(const std::vector<int32_t> &ids) const {
    if (!tokenizer_.decoder_type().empty()) {
        fail(tokenizer_.source(), ": decode with a decoder ", tokenizer_.decoder_type(), " is not supported");
    }
    // HF decode joins the tokens with ' '; the reference then removes every ' '.
    std::string joined;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::optional<std::string> token = tokenizer_.id_to_token(ids[i]);
        if (!token) fail(tokenizer_.source(), ": decode: id ", ids[i], " at position ", i, " is not in the vocabulary");
        joined += replace_all(*token, " ", "");
    }
    std::string text = replace_all(joined, "[SPACE]", " ");
    text = replace_all(text, "[STOP]", "");
    return replace_all(text, "[UNK]", "");
}

std::vector<int32_t> t3_text_tokens(const std::vector<int32_t> &ids, int32_t start_token, int32_t stop_token) {
    std::vector<int32_t> framed;
    framed.reserve(ids.size() + 2);
    framed.push_back(start_token);
    framed.insert(framed.end(), ids.begin(), ids.end());
    framed.push_back(stop_token);
    return framed;
}

} // namespace chatterbox::text
