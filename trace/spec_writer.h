// Writing spec text (trace/spec.h documents) that reads back as written:
// generated specs (testgen/spec_gen.h) and the fixes analyze_test_results
// suggests (testgen/analyze.h) are pasted into spec files, so every string
// and value they hold must survive the YAML reader unchanged.
//
//   absl::StrCat("{name: ", SpecScalar(name), ", tool_calls: {agent: ",
//                SpecScalar(agent), ", calls: [{name: write_file, arguments: ",
//                SpecFlow(arguments), "}]}}");
#ifndef UNDERSTUDY_TRACE_SPEC_WRITER_H_
#define UNDERSTUDY_TRACE_SPEC_WRITER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace trace {

// `s` as a YAML double-quoted scalar that reads back as `s`: JSON's escapes,
// plus \x.. for DEL and \u.... for the code points some YAML readers take
// for line breaks or byte-order marks (C1 controls, U+2028, U+2029,
// U+FEFF). Invalid UTF-8 (never in a trace: proto strings are UTF-8)
// becomes U+FFFD.
std::string SpecQuoted(absl::string_view s);

// A string field's value: plain when that reads back as the same string in
// block and flow context alike (never as a number, boolean or null),
// SpecQuoted otherwise.
std::string SpecScalar(absl::string_view s);

// A JSON value as YAML flow text that spec_check.cc reads back as the same JSON
// (validation::YamlToJson): strings always quoted (so "5" stays a string),
// numbers, booleans and null plain, keys in the object's (sorted) order.
std::string SpecFlow(const nlohmann::json& v);

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_SPEC_WRITER_H_
