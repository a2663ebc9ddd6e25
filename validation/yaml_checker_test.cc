#include "validation/yaml_checker.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "validation/utf8.h"

namespace understudy {
namespace validation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

YamlLimits Limits() {
  YamlLimits limits;
  limits.what = "thing";
  limits.max_bytes = 4096;
  limits.max_depth = 8;
  limits.max_nodes = 100;
  limits.empty_message = "empty thing";
  return limits;
}

// The one problem LoadYamlDocument reported, formatted.
std::string Refusal(const std::string& text) {
  Report report{"t.yaml", {}};
  std::optional<YAML::Node> root = LoadYamlDocument(text, Limits(), &report);
  EXPECT_FALSE(root.has_value());
  EXPECT_EQ(report.problems.size(), 1u);
  return FormatReport(report);
}

TEST(LoadYamlDocumentTest, AcceptsADocumentWithinBounds) {
  Report report{"t.yaml", {}};
  std::optional<YAML::Node> root = LoadYamlDocument("a: [1, 2]\nb: {c: d}\n", Limits(), &report);
  ASSERT_TRUE(root.has_value());
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(YamlToJson(*root).dump(), R"({"a":[1,2],"b":{"c":"d"}})");
}

TEST(LoadYamlDocumentTest, RefusesEachKindOfHostileInput) {
  EXPECT_EQ(Refusal(std::string(5000, ' ')),
            "t.yaml: error: thing is 5000 bytes, more than the 4096 allowed; refused");
  EXPECT_EQ(Refusal("a: b\nc: \"d\xFF\"\n"),
            "t.yaml:2:6: error: invalid UTF-8 (byte 0xFF at offset 10); save the thing as UTF-8");
  // yaml-cpp refuses an escape naming half of a surrogate pair itself.
  EXPECT_EQ(Refusal("a: \"\\udc00\"\n"),
            "t.yaml:1:11: error: YAML syntax error: invalid unicode: 56320");
  EXPECT_EQ(Refusal("[[[[[[[[[[1]]]]]]]]]]"), "t.yaml:1:9: error: nesting deeper than 8 levels");
  EXPECT_EQ(Refusal(std::string(3000, '[')), "t.yaml:1:1: error: nesting deeper than 8 levels");
  EXPECT_THAT(Refusal("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"),
              HasSubstr("more than 100 nodes once aliases are expanded"));
  EXPECT_EQ(Refusal("# nothing\n"), "t.yaml:1:1: error: empty thing");
  EXPECT_EQ(Refusal("a: 1\n---\nb: 2\n"),
            "t.yaml:3:1: error: the text holds 2 YAML documents; a thing is exactly one");
  EXPECT_THAT(Refusal("a: [1"), HasSubstr("YAML syntax error"));
  // yaml-cpp's message quotes one byte of a multibyte character: kept UTF-8.
  const std::string escape = Refusal("a: \"\\\xC3\xA9\"\n");
  EXPECT_THAT(escape, HasSubstr("unknown escape character"));
  EXPECT_TRUE(IsValidUtf8(escape)) << escape;
  // yaml-cpp alone never returns from these.
  for (const char* stalls : {",", " ,", ",a", "a: b\n---\n,", "---\n, x"}) {
    EXPECT_THAT(Refusal(stalls), HasSubstr("the parser makes no progress")) << stalls;
  }
}

class TestChecker : public YamlChecker {
 public:
  using YamlChecker::YamlChecker;
};

TEST(YamlCheckerTest, ReportsEveryProblemWithPathsAndSuggestions) {
  Report report{"t.yaml", {}};
  std::optional<YAML::Node> root =
      LoadYamlDocument("agnet: x\nn: -3\nb: maybe\nl: [a, '']\nre: '(x'\n", Limits(), &report);
  ASSERT_TRUE(root.has_value());
  TestChecker check(&report);
  check.Map(*root, "", {"agent", "n", "b", "l", "re"});
  int64_t n = 0;
  EXPECT_FALSE(check.Int((*root)["n"], "n", &n, 0));
  bool b = false;
  EXPECT_FALSE(check.Bool((*root)["b"], "b", &b));
  std::vector<std::string> l;
  EXPECT_FALSE(check.StringList((*root)["l"], "l", &l, /*non_empty=*/true));
  EXPECT_EQ(check.Regex((*root)["re"], "re"), nullptr);
  std::vector<std::string> lines;
  for (const Problem& p : report.problems) lines.push_back(FormatProblem(report, p));
  EXPECT_THAT(lines, ElementsAre(
                         "t.yaml:1:1: error: agnet: unknown field (did you mean \"agent\"?)",
                         "t.yaml:2:4: error: n: must be at least 0, got -3 (use 0 or more, e.g. `n: 0`)",
                         "t.yaml:3:4: error: b: expected true or false, got \"maybe\" (write `b: true` or "
                         "`b: false`)",
                         "t.yaml:4:8: error: l[1]: must not be empty (give it a value, or leave the field out)",
                         "t.yaml:5:5: error: re: invalid regex: missing ): (x (RE2 syntax; a backslash "
                         "before a character meant literally: \\( \\. \\*)"));
  EXPECT_EQ(ReportToJson(report)["errors"], 5);
}

TEST(YamlCheckerTest, KeyPathsQuoteDataKeys) {
  EXPECT_EQ(KeyPath("attributes", "gen_ai.tool.name"), "attributes[\"gen_ai.tool.name\"]");
  EXPECT_EQ(JoinPath("", "a"), "a");
  EXPECT_EQ(JoinPath("rules", 3), "rules[3]");
}

}  // namespace
}  // namespace validation
}  // namespace understudy
