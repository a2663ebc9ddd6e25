// What the codecs' request parsers share: the text of content parts, the
// sampling parameters, and the fields with no canonical equivalent that go
// into `extra` (provider/codec.h's codecs each read their own body with
// these, in their own field names).
#ifndef UNDERSTUDY_PROVIDER_REQUEST_FIELDS_H_
#define UNDERSTUDY_PROVIDER_REQUEST_FIELDS_H_

#include <initializer_list>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "provider/json_util.h"
#include "understudy/v1/completion.pb.h"

namespace understudy {
namespace provider {

// Every non-null member of `object` named neither in `ignored` (an API's
// kIgnoredRequestFields) nor in `mapped` (what has a canonical field) into
// `*extra`, in the object's order. `Out` is the JSON type of the extra
// object (Json, or nlohmann::json to sort its keys).
template <typename Out>
void CopyUnmapped(const Json& object, absl::Span<const absl::string_view> ignored,
                  absl::Span<const absl::string_view> mapped, Out* extra) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it->is_null() || absl::c_linear_search(ignored, it.key()) ||
        absl::c_linear_search(mapped, it.key())) {
      continue;
    }
    (*extra)[it.key()] = Out(*it);
  }
}

// OK when `role` (a message's, at `path`) is one of `roles`; else
// INVALID_ARGUMENT `PATH.role: expected "a", "b" or "c", got "ROLE"` (ROLE
// escaped and cut to 40 bytes).
absl::Status CheckRole(absl::string_view role, const std::string& path,
                       std::initializer_list<absl::string_view> roles);

// A tool call's `arguments` (JSON text) as the object the APIs that carry
// arguments as JSON put in an answer (Gemini's `args`, Ollama's
// `arguments`, Bedrock's `input`): {} when empty, the object the text
// spells, else {"arguments": TEXT}, so that arguments that are no object
// are kept rather than lost.
Json ArgumentsObject(const std::string& arguments);

// OpenAI's function tools, [{type: "function", function: {name,
// description, parameters}}], at "tools" (Chat Completions; Cohere v2
// writes them the same), into request->tools. When a tool has another type
// or fields beyond those, the whole array also goes verbatim into
// (*extra)["tools"]. Fails with ExpectedError / MissingError at the path.
absl::Status ParseFunctionTools(const Json& tools, v1::CompletionRequest* request, Json* extra);

// OpenAI's function tool calls, [{id, type: "function", function: {name,
// arguments (JSON text)}}], at `path` (an assistant message's tool_calls,
// in a request or an answer), into message->tool_calls. When a call has
// another type or fields beyond those, the whole array also goes verbatim
// into (*extra)["tool_calls"] (when `extra` is given).
absl::Status ParseFunctionToolCalls(const Json& calls, const std::string& path,
                                    v1::Message* message, Json* extra);

// How a sampling parameter is spelled in an API's request.
struct SamplingField {
  enum class Kind {
    kTemperature,  // a number
    kTopP,         // a number
    kMaxTokens,    // an integer
    kSeed,         // an integer
    kStopArray,    // an array of strings
    kStop,         // a string or an array of strings
  };
  absl::string_view key;
  Kind kind;
};

// Reads the members of `object` (at `path`, "" for the body's root) that
// `fields` name, in that order, into `*params` (absent and null members are
// skipped). Fails with ExpectedError at the member's path (or its
// element's) for a value of another type.
absl::Status ReadSampling(const Json& object, std::initializer_list<SamplingField> fields,
                          v1::SamplingParams* params, absl::string_view path = "");

// `value`, a message's content (at `path`): a string, or an array of content
// parts whose text parts (of a type in `text_types`) are joined into the
// message's content. An array that is anything but such parts, each plain
// by `is_plain`, also goes verbatim into extra[extra_key]. Fails with
// ExpectedError for another type, a part that is no object, or one without
// a string `type` (or, for a text part, `text`). Null `value`: nothing.
absl::Status ParseTextParts(const Json* value, const std::string& path,
                            std::initializer_list<absl::string_view> text_types,
                            bool (*is_plain)(const Json& part), absl::string_view extra_key,
                            v1::Message* message, Json* extra);

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_REQUEST_FIELDS_H_
