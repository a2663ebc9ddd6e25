#include "trace/spec_writer.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "trace/spec.h"

namespace understudy {
namespace trace {
namespace {

// What the spec reader makes of `name` and `arguments` written into a
// one-line item, in flow context (where ", [ ] { }" end a plain scalar).
v1::ExpectedToolCall ReadBack(const std::string& name, const nlohmann::json& arguments) {
  const std::string spec =
      absl::StrCat("assertions:\n  - {name: ", SpecScalar(name), ", tool_calls: {agent: ",
                   SpecScalar(name), ", calls: [{name: ", SpecScalar(name),
                   ", arguments: ", SpecFlow(arguments), "}]}}\n");
  absl::StatusOr<std::vector<v1::Assertion>> parsed = ParseSpec(spec, "written");
  EXPECT_THAT(parsed, IsOk()) << spec;
  if (!parsed.ok() || parsed->size() != 1) return {};
  EXPECT_EQ((*parsed)[0].name(), name);
  EXPECT_EQ((*parsed)[0].tool_calls().agent(), name);
  return (*parsed)[0].tool_calls().calls(0);
}

TEST(SpecWriterTest, StringsAndValuesReadBackAsWritten) {
  const nlohmann::json arguments = {{"path", "sum.py"},
                                    {"n", 5},
                                    {"text", "5"},
                                    {"flag", true},
                                    {"none", nullptr},
                                    {"list", {"a, b", "{c}"}},
                                    {"nested", {{"q", "say \"hi\"\n\tand\\go"}}}};
  for (const std::string& name :
       {std::string("write_file"), std::string("tool calls of executor"), std::string("yes"),
        std::string("12"), std::string("a, b"), std::string("key: value"), std::string("[x]"),
        std::string("# not a comment"), std::string(" padded "), std::string("caf\xC3\xA9"),
        std::string("line\nbreak"), std::string("\xE2\x80\xA8")}) {
    v1::ExpectedToolCall call = ReadBack(name, arguments);
    EXPECT_EQ(call.name(), name);
    EXPECT_EQ(nlohmann::json::parse(call.arguments()), arguments) << name;
  }
}

TEST(SpecWriterTest, PlainOnlyWhenThatIsSafe) {
  EXPECT_EQ(SpecScalar("executor"), "executor");
  EXPECT_EQ(SpecScalar("tool calls of executor"), "tool calls of executor");
  EXPECT_EQ(SpecScalar("true"), "\"true\"");
  EXPECT_EQ(SpecScalar("5"), "\"5\"");
  EXPECT_EQ(SpecScalar("a: b"), "\"a: b\"");
  EXPECT_EQ(SpecQuoted("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(SpecFlow({{"b", 1}, {"a", "x"}}), "{a: \"x\", b: 1}");
}

}  // namespace
}  // namespace trace
}  // namespace understudy
