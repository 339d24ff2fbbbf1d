#pragma once
// A restricted pickle machine. It decodes the opcodes plain data needs (protocols 2-5: containers,
// numbers, strings, memo, marks) and hands every global name, call (REDUCE) and persistent id to a
// Resolver, which decides what may be built (and what BUILD may set). Nothing is ever imported or executed, and sizes,
// object counts and nesting are bounded so that a hostile pickle cannot exhaust memory.

#include "core/tensor.h"

#include <any>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace chatterbox::pickle {

// One Python object. Objects reference each other by pointer, as Python references do, so that a
// memoised dict filled later by SETITEMS is seen filled by every reference to it.
struct Object {
    enum class Kind { None, Bool, Int, Float, String, List, Tuple, Dict, Global, Tensor, Custom };
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0;
    std::string text;                                   // String; Global: "module.qualname"
    std::vector<Object *> items;                        // List, Tuple
    std::vector<std::pair<Object *, Object *>> entries; // Dict, in insertion order
    std::shared_ptr<HostTensor> tensor;                 // Tensor
    std::any custom;                                    // Custom: whatever the resolver built (a storage reference)

    std::string kind_name() const;
};

// Owns every object of one unpickling.
class Arena {
  public:
    static constexpr size_t kMaxObjects = size_t(1) << 21;
    Object *make(Object::Kind kind); // throws when the pickle creates more than kMaxObjects objects
    size_t size() const { return objects_.size(); }

  private:
    std::deque<Object> objects_; // a deque never moves its elements
};

// Decides what the globals of a pickle may be and what calling them builds.
class Resolver {
  public:
    virtual ~Resolver() = default;
    // GLOBAL / STACK_GLOBAL: throws Error when `module.name` is not allowed.
    virtual void check_global(const std::string &module, const std::string &name) = 0;
    // REDUCE: `callable` is a Global this resolver allowed, `args` a Tuple.
    virtual Object *call(Arena &arena, const Object &callable, const Object &args) = 0;
    // BINPERSID: builds the object a persistent id names.
    virtual Object *persistent_load(Arena &arena, const Object &pid) = 0;
    // BUILD: sets the pickled state (its attributes) of `target`; throws Error when not allowed.
    virtual void build(Object &target, const Object &state) = 0;
};

// Runs the pickle and returns the object STOP leaves. Errors name the byte offset and the opcode.
Object *unpickle(const uint8_t *data, size_t size, Arena &arena, Resolver &resolver);

} // namespace chatterbox::pickle
