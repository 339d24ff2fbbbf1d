#pragma once
// The fields of a multipart/form-data upload (voice_routes.h), checked against those the route
// takes before anything reads them: a request that is not multipart, is over the upload limit, or
// has a field the route does not take or one given twice is an ApiError (400 / 413) naming it.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace httplib {
struct Request;
} // namespace httplib

namespace chatterbox::server {

// One part of the form, in the request's memory: a file, with the name the client gave it, or a
// text field (no filename).
struct FormPart {
    const std::string &content;
    const std::string &filename; // empty for a text field
};

class MultipartForm {
  public:
    MultipartForm(const httplib::Request &request, std::initializer_list<const char *> accepted, size_t max_bytes);

    const FormPart *part(const char *name) const; // nullptr when absent
    std::optional<std::string> text(const char *name) const;
    // Throws ApiError 400 "'name' is required: what" when absent.
    const FormPart &required(const char *name, const char *what) const;

  private:
    std::map<std::string, FormPart> parts_;
};

// "true" / "false" (absent: false); anything else is a 400 naming the field.
bool parse_flag(const MultipartForm &form, const char *name);
// The "seed" field: up to 19 decimal digits (absent: the default seed); anything else is a 400.
uint64_t parse_seed(const MultipartForm &form);

} // namespace chatterbox::server
