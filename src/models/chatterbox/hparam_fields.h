#pragma once
// A component's hyper-parameters as data: ONE table per struct names every field with its GGUF
// metadata key and the rule its value must satisfy. Writing, reading and validating all walk that
// table, so a field cannot be written and never read, or read under another name.

#include "core/error.h"
#include "core/gguf_file.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace chatterbox {

class WeightStore;

enum class FieldRule {
    positive,     // > 0
    non_negative, // >= 0
    fixed,        // the engine implements only the default value: any other is refused by name
};

template <class H> struct HparamField {
    const char *key; // full metadata key, "chatterbox.t3.n_layers"
    std::variant<int H::*, int64_t H::*, float H::*, double H::*, std::array<int, 3> H::*> member;
    FieldRule rule;
};

template <class H> using HparamTable = std::vector<HparamField<H>>;

namespace hparam_detail {

template <class T> std::string value_text(T v) { return concat(v); }
inline std::string value_text(const std::array<int, 3> &v) { return concat("[", v[0], ", ", v[1], ", ", v[2], "]"); }

inline bool satisfies(double v, FieldRule rule) { return rule == FieldRule::positive ? v > 0 : v >= 0; }
inline bool satisfies(const std::array<int, 3> &v, FieldRule rule) {
    for (int x : v)
        if (!satisfies(double(x), rule)) return false;
    return true;
}

inline const char *rule_text(FieldRule rule) { return rule == FieldRule::positive ? "positive" : "non-negative"; }

} // namespace hparam_detail

// Throws Error naming the key of the first field that breaks its rule.
template <class H> void validate_fields(const HparamTable<H> &table, const H &h) {
    static const H defaults{}; // the supported values of fixed fields
    for (const HparamField<H> &field : table)
        std::visit(
            [&](auto member) {
                const auto &value = h.*member;
                const auto &supported = defaults.*member;
                if (field.rule == FieldRule::fixed) {
                    if (value != supported)
                        fail(field.key, " is ", hparam_detail::value_text(value), "; this engine supports only ",
                             hparam_detail::value_text(supported));
                } else if (!hparam_detail::satisfies(value, field.rule)) {
                    fail(field.key, " is ", hparam_detail::value_text(value), "; it must be ",
                         hparam_detail::rule_text(field.rule));
                }
            },
            field.member);
}

template <class H> void write_fields(const HparamTable<H> &table, const H &h, GgufWriter &writer) {
    for (const HparamField<H> &field : table)
        std::visit(
            [&](auto member) {
                const auto &value = h.*member;
                using T = std::decay_t<decltype(value)>;
                if constexpr (std::is_integral_v<T>)
                    writer.set_int(field.key, value);
                else if constexpr (std::is_floating_point_v<T>)
                    writer.set_float(field.key, value);
                else
                    writer.set_int_array(field.key, std::vector<int64_t>(value.begin(), value.end()));
            },
            field.member);
}

// Every field from the metadata (a missing or mistyped key is an Error naming it); the caller
// validates the result with its rules. Fields keep the type of their member: a value that does not
// fit it is refused by name.
template <class H> H read_fields(const HparamTable<H> &table, const GgufFile &file) {
    H h;
    for (const HparamField<H> &field : table)
        std::visit(
            [&](auto member) {
                auto &value = h.*member;
                using T = std::decay_t<decltype(value)>;
                if constexpr (std::is_integral_v<T>) {
                    const int64_t read = file.get_int(field.key);
                    value = T(read);
                    if (int64_t(value) != read) fail(file.path(), ": ", field.key, " is ", read, ", out of range");
                } else if constexpr (std::is_floating_point_v<T>) {
                    value = T(file.get_float(field.key));
                } else {
                    const std::vector<int64_t> read = file.get_int_array(field.key);
                    if (read.size() != value.size())
                        fail(file.path(), ": ", field.key, " has ", read.size(), " values; this engine supports only ",
                             value.size());
                    for (size_t i = 0; i < value.size(); ++i) value[i] = int(read[i]);
                }
            },
            field.member);
    return h;
}

// Sizes a checkpoint declares by its tensor shapes. An absent tensor leaves the size as it was
// (binding the component then reports the tensor missing); a tensor of another rank is an Error
// naming it.
class CheckpointShapes {
  public:
    CheckpointShapes(const WeightStore &store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}

    // size = dimension `axis` of tensor `name`, which must have `rank` dimensions.
    template <class T> void read(const std::string &name, size_t rank, size_t axis, T &size) const {
        if (const std::optional<int64_t> dim = dimension(name, rank, axis)) size = T(*dim);
    }
    // count = how many of before + "0" + after, before + "1" + after, ... exist (unchanged when none).
    template <class T> void count(const std::string &before, const std::string &after, T &count) const {
        if (const int64_t n = count_indexed(before, after)) count = T(n);
    }

    // hp after hp.validate(), whose Error is rethrown as one about this checkpoint's shapes.
    template <class H> H validated(H hp) const {
        try {
            hp.validate();
        } catch (const Error &e) {
            fail("the checkpoint under '", prefix_, "': its tensor shapes give ", e.what());
        }
        return hp;
    }

  private:
    std::optional<int64_t> dimension(const std::string &name, size_t rank, size_t axis) const;
    int64_t count_indexed(const std::string &before, const std::string &after) const;

    const WeightStore &store_;
    std::string prefix_;
};

} // namespace chatterbox
