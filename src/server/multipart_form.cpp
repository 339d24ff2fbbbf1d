#include "server/multipart_form.h"

#include "core/error.h"
#include "models/chatterbox/synthesis_params.h"
#include "server/api_error.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>

namespace chatterbox::server {

MultipartForm::MultipartForm(const httplib::Request &request, std::initializer_list<const char *> accepted,
                             size_t max_bytes) {
    if (!request.is_multipart_form_data())
        throw ApiError(400, concat("the request must be multipart/form-data (got '",
                                   request.get_header_value("Content-Type"), "')"));
    // httplib keeps the parts with a filename as files, the others as text fields.
    size_t bytes = request.body.size();
    for (const auto &field : request.form.fields) bytes += field.second.content.size();
    for (const auto &file : request.form.files) bytes += file.second.content.size();
    check_body_size(bytes, max_bytes);
    static const std::string kNoFilename;
    const auto add = [&](const std::string &name, const std::string &content, const std::string &filename) {
        if (std::none_of(accepted.begin(), accepted.end(), [&](const char *a) { return name == a; }))
            throw ApiError(400, concat("unknown field '", name, "'"), name);
        if (!parts_.emplace(name, FormPart{content, filename}).second)
            throw ApiError(400, concat("field '", name, "' is given twice"), name);
    };
    for (const auto &[name, field] : request.form.fields) add(name, field.content, kNoFilename);
    for (const auto &[name, file] : request.form.files) add(name, file.content, file.filename);
}

const FormPart *MultipartForm::part(const char *name) const {
    const auto it = parts_.find(name);
    return it == parts_.end() ? nullptr : &it->second;
}

std::optional<std::string> MultipartForm::text(const char *name) const {
    const FormPart *found = part(name);
    if (!found) return std::nullopt;
    return found->content;
}

const FormPart &MultipartForm::required(const char *name, const char *what) const {
    const FormPart *found = part(name);
    if (!found) throw ApiError(400, concat("'", name, "' is required: ", what), name);
    return *found;
}

bool parse_flag(const MultipartForm &form, const char *name) {
    const std::optional<std::string> value = form.text(name);
    if (!value || *value == "false") return false;
    if (*value == "true") return true;
    throw ApiError(400, concat("'", name, "' must be true or false, got '", *value, "'"), name);
}

uint64_t parse_seed(const MultipartForm &form) {
    const std::optional<std::string> value = form.text("seed");
    if (!value) return SynthesisParams{}.sampling.seed;
    const bool digits = !value->empty() && value->size() <= 19 &&
                        std::all_of(value->begin(), value->end(), [](unsigned char c) { return std::isdigit(c); });
    if (!digits) throw ApiError(400, concat("'seed' must be a non-negative integer, got '", *value, "'"), "seed");
    return std::stoull(*value);
}

} // namespace chatterbox::server
