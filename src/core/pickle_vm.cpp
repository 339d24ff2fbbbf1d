#include "core/pickle_vm.h"

#include "core/error.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace chatterbox::pickle {

namespace {

// The opcodes this machine runs (names as in Python's pickletools).
// clang-format off
enum Opcode : uint8_t {
    MARK = '(', STOP = '.', BINFLOAT = 'G', BININT = 'J', BININT1 = 'K', BININT2 = 'M', NONE = 'N', BINPERSID = 'Q',
    REDUCE = 'R', BINUNICODE = 'X', EMPTY_LIST = ']', APPEND = 'a', BUILD = 'b', GLOBAL = 'c', APPENDS = 'e', BINGET = 'h',
    LONG_BINGET = 'j', BINPUT = 'q', LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', SETITEMS = 'u', EMPTY_TUPLE = ')',
    EMPTY_DICT = '}', PROTO = 0x80, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89,
    LONG1 = 0x8a, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95,
};

// Every opcode of pickle protocols 0-5, so that an error can name what it refused.
const char *opcode_name(uint8_t op) {
    static const std::pair<uint8_t, const char *> names[] = {
        {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"}, {'I', "INT"},
        {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"}, {'N', "NONE"}, {'P', "PERSID"},
        {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"}, {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"},
        {'V', "UNICODE"}, {'X', "BINUNICODE"}, {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"},
        {'}', "EMPTY_DICT"}, {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"}, {'j', "LONG_BINGET"},
        {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"}, {'r', "LONG_BINPUT"},
        {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"}, {'u', "SETITEMS"}, {'G', "BINFLOAT"},
        {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"}, {0x80, "PROTO"}, {0x81, "NEWOBJ"}, {0x82, "EXT1"},
        {0x83, "EXT2"}, {0x84, "EXT4"}, {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"},
        {0x89, "NEWFALSE"}, {0x8a, "LONG1"}, {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"},
        {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x92, "NEWOBJ_EX"},
        {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"}, {0x95, "FRAME"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"},
        {0x98, "READONLY_BUFFER"},
    };
    // clang-format on
    for (const auto &[code, name] : names)
        if (code == op) return name;
    return nullptr;
}

std::string opcode_label(uint8_t op) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    const char *name = opcode_name(op);
    return name ? concat("opcode ", name, " (", hex, ")") : concat("unknown opcode ", hex);
}

constexpr size_t kMaxMarkDepth = 1000; // nesting of MARK-delimited containers
constexpr size_t kMaxStackItems = Arena::kMaxObjects;
constexpr size_t kMaxMemoEntries = Arena::kMaxObjects;
constexpr size_t kMaxStringBytes = 1 << 26;
constexpr size_t kMaxGlobalNameBytes = 1024;

class Machine {
  public:
    Machine(const uint8_t *data, size_t size, Arena &arena, Resolver &resolver)
        : data_(data), size_(size), arena_(arena), resolver_(resolver) {}

    Object *run() {
        while (pos_ < size_) {
            op_pos_ = pos_;
            op_ = data_[pos_++];
            if (op_ == STOP) return finish();
            step();
        }
        fail("truncated pickle: it ends at byte ", size_, " without a STOP opcode");
    }

  private:
    template <class... Parts> [[noreturn]] void fail_here(Parts &&...parts) const {
        fail("pickle byte ", op_pos_, ", ", opcode_label(op_), ": ", std::forward<Parts>(parts)...);
    }

    const uint8_t *take(size_t n) {
        if (n > size_ - pos_)
            fail_here("truncated pickle: the opcode needs ", n, " more bytes, ", size_ - pos_, " remain");
        const uint8_t *p = data_ + pos_;
        pos_ += n;
        return p;
    }
    uint64_t read_le(size_t n) {
        const uint8_t *p = take(n);
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
        return v;
    }
    std::string read_line() { // GLOBAL's "module\n" and "name\n"
        for (size_t end = pos_; end < size_ && end - pos_ <= kMaxGlobalNameBytes; ++end) {
            if (data_[end] != '\n') continue;
            std::string line(reinterpret_cast<const char *>(data_ + pos_), end - pos_);
            pos_ = end + 1;
            return line;
        }
        fail_here("truncated pickle or overlong name: no newline within ", kMaxGlobalNameBytes, " bytes");
    }

    Object *make(Object::Kind kind) { return arena_.make(kind); }
    Object *make_int(int64_t v) {
        Object *o = make(Object::Kind::Int);
        o->integer = v;
        return o;
    }
    void push(Object *o) {
        if (stack_.size() >= kMaxStackItems) fail_here("the stack grows beyond ", kMaxStackItems, " items");
        stack_.push_back(o);
    }
    size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
    Object *pop() {
        if (stack_.size() <= floor()) fail_here("stack underflow: the opcode needs an item and the stack is empty");
        Object *o = stack_.back();
        stack_.pop_back();
        return o;
    }
    Object *top() {
        if (stack_.size() <= floor()) fail_here("stack underflow: the opcode needs an item and the stack is empty");
        return stack_.back();
    }
    std::vector<Object *> pop_mark() {
        if (marks_.empty()) fail_here("stack underflow: no MARK to pop to");
        std::vector<Object *> items(stack_.begin() + std::ptrdiff_t(marks_.back()), stack_.end());
        stack_.resize(marks_.back());
        marks_.pop_back();
        return items;
    }
    Object *make_tuple(std::vector<Object *> items) {
        Object *t = make(Object::Kind::Tuple);
        t->items = std::move(items);
        return t;
    }
    Object *pop_tuple(size_t n) {
        if (stack_.size() < floor() + n)
            fail_here("stack underflow: the opcode needs ", n, " items, the stack holds ", stack_.size() - floor());
        std::vector<Object *> items(stack_.end() - std::ptrdiff_t(n), stack_.end());
        stack_.resize(stack_.size() - n);
        return make_tuple(std::move(items));
    }
    void append(Object *list, const std::vector<Object *> &items) {
        if (list->kind != Object::Kind::List) fail_here("cannot append to a ", list->kind_name(), ", only to a list");
        list->items.insert(list->items.end(), items.begin(), items.end());
    }
    void set_items(Object *dict, const std::vector<Object *> &flat) {
        if (dict->kind != Object::Kind::Dict)
            fail_here("cannot set items of a ", dict->kind_name(), ", only of a dict");
        if (flat.size() % 2) fail_here("odd number of items (", flat.size(), ") for key/value pairs");
        for (size_t i = 0; i < flat.size(); i += 2) {
            const Object::Kind key = flat[i]->kind;
            if (key == Object::Kind::List || key == Object::Kind::Dict)
                fail_here("a ", flat[i]->kind_name(), " cannot be a dict key (unhashable)");
            dict->entries.emplace_back(flat[i], flat[i + 1]);
        }
    }
    void push_string(size_t length) {
        if (length > kMaxStringBytes) fail_here("string of ", length, " bytes exceeds the limit of ", kMaxStringBytes);
        const uint8_t *p = take(length);
        Object *s = make(Object::Kind::String);
        s->text.assign(reinterpret_cast<const char *>(p), length);
        push(s);
    }
    void push_global(const std::string &module, const std::string &name) {
        resolver_.check_global(module, name);
        Object *g = make(Object::Kind::Global);
        g->text = module + "." + name;
        push(g);
    }
    void memo_put(uint64_t index) {
        if (memo_.size() >= kMaxMemoEntries && !memo_.count(index))
            fail_here("the memo grows beyond ", kMaxMemoEntries, " entries");
        memo_[index] = top();
    }
    void memo_get(uint64_t index) {
        auto it = memo_.find(index);
        if (it == memo_.end()) fail_here("bad memo index ", index, " (", memo_.size(), " objects memoised)");
        push(it->second);
    }

    void step() {
        switch (op_) {
        case PROTO: {
            const unsigned version = unsigned(read_le(1));
            if (version < 2 || version > 5) fail_here("pickle protocol ", version, " is not supported (2 to 5 are)");
            break;
        }
        case FRAME:
            read_le(8);
            break; // framing only groups opcodes for buffered readers
        case MARK:
            if (marks_.size() >= kMaxMarkDepth) fail_here("MARKs nested deeper than ", kMaxMarkDepth, " levels");
            marks_.push_back(stack_.size());
            break;
        case NONE:
            push(make(Object::Kind::None));
            break;
        case NEWTRUE:
        case NEWFALSE: {
            Object *b = make(Object::Kind::Bool);
            b->boolean = op_ == NEWTRUE;
            push(b);
            break;
        }
        case BININT:
            push(make_int(int32_t(uint32_t(read_le(4)))));
            break;
        case BININT1:
            push(make_int(int64_t(read_le(1))));
            break;
        case BININT2:
            push(make_int(int64_t(read_le(2))));
            break;
        case LONG1: {
            const size_t n = size_t(read_le(1));
            if (n > 8) fail_here("integer of ", n, " bytes does not fit in 64 bits");
            uint64_t v = n ? read_le(n) : 0;
            if (n && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n); // sign-extend
            push(make_int(int64_t(v)));
            break;
        }
        case BINFLOAT: { // big-endian IEEE double
            const uint8_t *p = take(8);
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
            Object *f = make(Object::Kind::Float);
            std::memcpy(&f->real, &bits, sizeof bits);
            push(f);
            break;
        }
        case SHORT_BINUNICODE:
            push_string(size_t(read_le(1)));
            break;
        case BINUNICODE:
            push_string(size_t(read_le(4)));
            break;
        case BINUNICODE8: {
            const uint64_t n = read_le(8);
            if (n > kMaxStringBytes) fail_here("string of ", n, " bytes exceeds the limit of ", kMaxStringBytes);
            push_string(size_t(n));
            break;
        }
        case EMPTY_LIST:
            push(make(Object::Kind::List));
            break;
        case EMPTY_DICT:
            push(make(Object::Kind::Dict));
            break;
        case EMPTY_TUPLE:
            push(make(Object::Kind::Tuple));
            break;
        case TUPLE:
            push(make_tuple(pop_mark()));
            break;
        case TUPLE1:
            push(pop_tuple(1));
            break;
        case TUPLE2:
            push(pop_tuple(2));
            break;
        case TUPLE3:
            push(pop_tuple(3));
            break;
        case APPEND: {
            Object *item = pop();
            append(top(), {item});
            break;
        }
        case APPENDS: {
            std::vector<Object *> items = pop_mark();
            append(top(), items);
            break;
        }
        case SETITEM: {
            Object *value = pop();
            Object *key = pop();
            set_items(top(), {key, value});
            break;
        }
        case SETITEMS: {
            std::vector<Object *> flat = pop_mark();
            set_items(top(), flat);
            break;
        }
        case BINPUT:
            memo_put(read_le(1));
            break;
        case LONG_BINPUT:
            memo_put(read_le(4));
            break;
        case MEMOIZE:
            memo_put(memo_.size());
            break;
        case BINGET:
            memo_get(read_le(1));
            break;
        case LONG_BINGET:
            memo_get(read_le(4));
            break;
        case GLOBAL: {
            const std::string module = read_line();
            const std::string name = read_line();
            push_global(module, name);
            break;
        }
        case STACK_GLOBAL: {
            Object *name = pop();
            Object *module = pop();
            if (module->kind != Object::Kind::String || name->kind != Object::Kind::String)
                fail_here("module and name must be strings, got ", module->kind_name(), " and ", name->kind_name());
            push_global(module->text, name->text);
            break;
        }
        case REDUCE: {
            Object *args = pop();
            Object *callable = pop();
            if (callable->kind != Object::Kind::Global)
                fail_here("cannot call a ", callable->kind_name(), ", only an allowed global");
            if (args->kind != Object::Kind::Tuple) fail_here("call arguments must be a tuple, got ", args->kind_name());
            push(resolver_.call(arena_, *callable, *args));
            break;
        }
        case BINPERSID:
            push(resolver_.persistent_load(arena_, *pop()));
            break;
        case BUILD: {
            Object *state = pop();
            resolver_.build(*top(), *state);
            break;
        }
        default:
            if (opcode_name(op_)) fail_here("not supported (loading plain data needs none of it)");
            fail_here("not a pickle opcode (corrupt data?)");
        }
    }

    Object *finish() {
        if (!marks_.empty()) fail_here(marks_.size(), " MARK(s) left open at STOP");
        if (stack_.size() != 1) fail_here("the stack holds ", stack_.size(), " items at STOP, expected 1");
        return stack_.back();
    }

    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
    size_t op_pos_ = 0;
    uint8_t op_ = 0;
    Arena &arena_;
    Resolver &resolver_;
    std::vector<Object *> stack_;
    std::vector<size_t> marks_; // stack sizes at each open MARK
    std::unordered_map<uint64_t, Object *> memo_;
};

} // namespace

std::string Object::kind_name() const {
    switch (kind) {
    case Kind::None:
        return "None";
    case Kind::Bool:
        return "bool";
    case Kind::Int:
        return "int";
    case Kind::Float:
        return "float";
    case Kind::String:
        return "string";
    case Kind::List:
        return "list";
    case Kind::Tuple:
        return "tuple";
    case Kind::Dict:
        return "dict";
    case Kind::Global:
        return "global '" + text + "'";
    case Kind::Tensor:
        return "tensor";
    case Kind::Custom:
        return "resolver-built object";
    }
    return "?";
}

Object *Arena::make(Object::Kind kind) {
    if (objects_.size() >= kMaxObjects) fail("the pickle creates more than ", kMaxObjects, " objects");
    objects_.emplace_back();
    objects_.back().kind = kind;
    return &objects_.back();
}

Object *unpickle(const uint8_t *data, size_t size, Arena &arena, Resolver &resolver) {
    return Machine(data, size, arena, resolver).run();
}

} // namespace chatterbox::pickle
