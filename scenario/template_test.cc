#include "scenario/template.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace scenario {
namespace {

using ::nlohmann::json;

// A lookup over `values` that records the names it was asked for.
struct FakeLookup {
  std::map<std::string, std::string> values;
  std::vector<std::string> asked;

  TemplateLookup Get() {
    return [this](absl::string_view name) -> std::optional<std::string> {
      asked.emplace_back(name);
      auto it = values.find(std::string(name));
      if (it == values.end()) return std::nullopt;
      return it->second;
    };
  }
};

std::string Render(absl::string_view text, const std::map<std::string, std::string>& values) {
  FakeLookup lookup{values, {}};
  absl::StatusOr<std::string> out = RenderTemplate(text, lookup.Get(), "test");
  EXPECT_THAT(out, IsOk());
  return out.ok() ? *out : "";
}

TEST(RenderTemplateTest, ReplacesEveryPlaceholder) {
  EXPECT_EQ(Render("Plan {{plan_id}} for {{ user }}: {{plan_id}}.",
                   {{"plan_id", "PLAN-1"}, {"user", "ada"}}),
            "Plan PLAN-1 for ada: PLAN-1.");
}

TEST(RenderTemplateTest, AllowsSpacesAndNamesWithDotsAndDashes) {
  EXPECT_EQ(Render("[{{   a.b-c_1 \t}}]", {{"a.b-c_1", "x"}}), "[x]");
  EXPECT_EQ(Render("{{_x}}{{y}}", {{"_x", "1"}, {"y", "2"}}), "12");
}

TEST(RenderTemplateTest, TextWithoutPlaceholdersIsUnchanged) {
  EXPECT_EQ(Render("", {}), "");
  EXPECT_EQ(Render("no braces here", {}), "no braces here");
  EXPECT_EQ(Render(R"({"json": {"nested": 1}})", {}), R"({"json": {"nested": 1}})");
}

TEST(RenderTemplateTest, UnterminatedOrMalformedPlaceholdersStayLiteral) {
  EXPECT_EQ(Render("open {{name and more", {{"name", "x"}}), "open {{name and more");
  EXPECT_EQ(Render("{{name}", {{"name", "x"}}), "{{name}");
  EXPECT_EQ(Render("{{}} {{ }} {{1x}} {{a b}}", {{"a", "x"}}), "{{}} {{ }} {{1x}} {{a b}}");
  EXPECT_EQ(Render("trailing {{", {}), "trailing {{");
  EXPECT_EQ(Render("trailing {", {}), "trailing {");
}

TEST(RenderTemplateTest, ExtraBracesAroundAPlaceholderAreKept) {
  EXPECT_EQ(Render("{{{x}}}", {{"x", "1"}}), "{1}");
  EXPECT_EQ(Render("{{ {{x}}", {{"x", "1"}}), "{{ 1");
}

TEST(RenderTemplateTest, ValuesAreInsertedVerbatimAndNotRenderedAgain) {
  EXPECT_EQ(Render("{{a}}", {{"a", "{{b}}"}, {"b", "no"}}), "{{b}}");
  EXPECT_EQ(Render("{{a}}", {{"a", ""}}), "");
}

TEST(RenderTemplateTest, MissingValueIsFailedPreconditionNamingWhereAndName) {
  FakeLookup lookup{{{"a", "1"}}, {}};
  EXPECT_THAT(RenderTemplate("{{a}} {{ plan_id }} {{also_missing}}", lookup.Get(),
                             "playbook.turns[0].actions[1]"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "playbook.turns[0].actions[1]: {{plan_id}} is not set"));
  // Stops at the first missing value.
  EXPECT_EQ(lookup.asked, (std::vector<std::string>{"a", "plan_id"}));
}

TEST(RenderTemplateJsonTest, RendersStringValuesRecursivelyButNotKeys) {
  FakeLookup lookup{{{"id", "PLAN-7"}, {"k", "nope"}}, {}};
  const json in = json::parse(R"({
    "id": "{{id}}",
    "{{k}}": "key kept",
    "list": ["a {{id}}", 1, true, null, {"deep": ["{{ id }}"]}],
    "n": 2.5
  })");
  absl::StatusOr<json> out = RenderTemplateJson(in, lookup.Get(), "args");
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(*out, json::parse(R"({
    "id": "PLAN-7",
    "{{k}}": "key kept",
    "list": ["a PLAN-7", 1, true, null, {"deep": ["PLAN-7"]}],
    "n": 2.5
  })"));
}

TEST(RenderTemplateJsonTest, RendersABareStringAndKeepsScalars) {
  FakeLookup lookup{{{"x", "1"}}, {}};
  EXPECT_EQ(*RenderTemplateJson(json("{{x}}"), lookup.Get(), "w"), json("1"));
  EXPECT_EQ(*RenderTemplateJson(json(42), lookup.Get(), "w"), json(42));
  EXPECT_EQ(*RenderTemplateJson(json::object(), lookup.Get(), "w"), json::object());
}

TEST(RenderTemplateJsonTest, MissingValueDeepInsideFails) {
  FakeLookup lookup;
  EXPECT_THAT(RenderTemplateJson(json::parse(R"({"a": [{"b": "{{gone}}"}]})"), lookup.Get(),
                                 "mock_tools.x"),
              StatusIs(absl::StatusCode::kFailedPrecondition, "mock_tools.x: {{gone}} is not set"));
}

}  // namespace
}  // namespace scenario
}  // namespace understudy
