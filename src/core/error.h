#pragma once
// Errors: exceptions carrying a precise message (what, where, expected vs got).

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace chatterbox {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A request stopped by its cancel flag or a callback.
class Cancelled : public Error {
public:
    using Error::Error;
};

// A request parameter out of range, found before any computation.
class InvalidArgument : public Error {
public:
    using Error::Error;
};

// Concatenates its arguments with operator<< into one message.
template <class... Parts> std::string concat(Parts &&...parts) {
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

template <class... Parts> [[noreturn]] void fail(Parts &&...parts) {
    throw Error(concat(std::forward<Parts>(parts)...));
}

} // namespace chatterbox
