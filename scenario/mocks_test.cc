#include "scenario/mocks.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace scenario {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kMocks[] = R"(
name: mocks
mock_tools:
  search: "no results"
  weather: {template: "{{ city }}: sunny, {{days}} days, {{units}}"}
  calc: {result: {value: 42, exact: true}}
  motto: {result: "carpe diem"}
mock_ui: {confirm: false, select: 1, input: "typed", editor: "edited"}
)";

Scenario MustLoad(const std::string& body) {
  absl::StatusOr<Scenario> s =
      LoadScenario(absl::StrCat("schema: understudy.scenario/v1\n", body), "test.yaml");
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return Scenario{};
  }
  return *std::move(s);
}

v1::InvokeToolRequest Call(const std::string& tool, const std::string& arguments = "") {
  v1::InvokeToolRequest request;
  request.set_run("run-1");
  request.set_tool(tool);
  request.set_arguments(arguments);
  return request;
}

v1::AskRequest Ask(v1::UiKind kind, std::vector<std::string> items = {}) {
  v1::AskRequest request;
  request.set_kind(kind);
  request.set_prompt("Continue?");
  for (std::string& item : items) request.add_items(std::move(item));
  return request;
}

// ---- Tools

TEST(InvokeMockToolTest, StringMockAnswersItsText) {
  const Scenario scenario = MustLoad(kMocks);
  absl::StatusOr<v1::InvokeToolResponse> r =
      InvokeMockTool(scenario, Call("search", R"({"q": "x"})"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->content(), "no results");
  EXPECT_EQ(r->result(), R"("no results")");
  EXPECT_TRUE(r->mocked());
}

TEST(InvokeMockToolTest, TemplateRendersTheCallsArguments) {
  const Scenario scenario = MustLoad(kMocks);
  absl::StatusOr<v1::InvokeToolResponse> r = InvokeMockTool(
      scenario, Call("weather", R"({"city": "Oslo \"N\"", "days": 3, "units": ["C"]})"));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->content(), R"(Oslo "N": sunny, 3 days, ["C"])");
  EXPECT_EQ(r->result(), R"("Oslo \"N\": sunny, 3 days, [\"C\"]")");
  EXPECT_TRUE(r->mocked());
}

TEST(InvokeMockToolTest, TemplateNamingAMissingArgumentIsInvalidArgument) {
  const Scenario scenario = MustLoad(kMocks);
  EXPECT_THAT(InvokeMockTool(scenario, Call("weather", R"({"town": "Oslo", "days": 1})")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "mock_tools.weather: {{city}} is not set in the call's arguments "
                       "(it has: \"days\", \"town\")"));
  EXPECT_THAT(InvokeMockTool(scenario, Call("weather")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(it has: none)")));
}

TEST(InvokeMockToolTest, ResultMockAnswersJson) {
  const Scenario scenario = MustLoad(kMocks);
  absl::StatusOr<v1::InvokeToolResponse> calc = InvokeMockTool(scenario, Call("calc", "{}"));
  ASSERT_THAT(calc, IsOk());
  EXPECT_EQ(calc->result(), R"({"exact":true,"value":42})");
  EXPECT_EQ(calc->content(), calc->result());
  EXPECT_TRUE(calc->mocked());

  absl::StatusOr<v1::InvokeToolResponse> motto = InvokeMockTool(scenario, Call("motto"));
  ASSERT_THAT(motto, IsOk());
  EXPECT_EQ(motto->result(), R"("carpe diem")");
  EXPECT_EQ(motto->content(), "carpe diem");
}

TEST(InvokeMockToolTest, EmptyToolIsInvalidArgument) {
  EXPECT_THAT(InvokeMockTool(MustLoad(kMocks), Call("")),
              StatusIs(absl::StatusCode::kInvalidArgument, "tool: required"));
}

TEST(InvokeMockToolTest, UnknownToolIsNotFoundListingTheMockedOnes) {
  EXPECT_THAT(InvokeMockTool(MustLoad(kMocks), Call("deploy")),
              StatusIs(absl::StatusCode::kNotFound,
                       "tool \"deploy\" is not mocked by scenario \"mocks\"; mocked tools: calc, "
                       "motto, search, weather (add it under mock_tools)"));
  EXPECT_THAT(InvokeMockTool(MustLoad("rules: []\n"), Call("deploy")),
              StatusIs(absl::StatusCode::kNotFound,
                       "tool \"deploy\" is not mocked by scenario \"test.yaml\"; mocked tools: "
                       "none (add it under mock_tools)"));
}

TEST(InvokeMockToolTest, ArgumentsMustBeAJsonObject) {
  const Scenario scenario = MustLoad(kMocks);
  EXPECT_THAT(InvokeMockTool(scenario, Call("search", "{not json")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("arguments: invalid JSON at byte 2: syntax error")));
  EXPECT_THAT(
      InvokeMockTool(scenario, Call("search", "[1, 2]")),
      StatusIs(absl::StatusCode::kInvalidArgument, "arguments: not a JSON object: got array"));
  EXPECT_THAT(
      InvokeMockTool(scenario, Call("search", R"("text")")),
      StatusIs(absl::StatusCode::kInvalidArgument, "arguments: not a JSON object: got string"));
}

TEST(InvokeMockToolTest, OversizedOrDeeplyNestedArgumentsAreRefused) {
  const Scenario scenario = MustLoad(kMocks);
  const std::string big =
      absl::StrCat(R"({"q": ")", std::string(kMaxToolArgumentsBytes, 'x'), R"("})");
  EXPECT_THAT(InvokeMockTool(scenario, Call("search", big)),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("arguments: ")));
  const std::string deep =
      absl::StrCat(R"({"a": )", std::string(100000, '['), std::string(100000, ']'), "}");
  EXPECT_THAT(
      InvokeMockTool(scenario, Call("weather", deep)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "arguments: JSON nested deeper than 256 levels at byte 261"));
}

// ---- Ui

TEST(AnswerMockUiTest, AnswersFromTheScenario) {
  const Scenario scenario = MustLoad(kMocks);

  absl::StatusOr<v1::AskResponse> confirm = AnswerMockUi(&scenario, Ask(v1::UI_KIND_CONFIRM));
  ASSERT_THAT(confirm, IsOk());
  EXPECT_EQ(confirm->kind(), v1::UI_KIND_CONFIRM);
  EXPECT_FALSE(confirm->confirmed());
  EXPECT_TRUE(confirm->mocked());

  absl::StatusOr<v1::AskResponse> select =
      AnswerMockUi(&scenario, Ask(v1::UI_KIND_SELECT, {"red", "green", "blue"}));
  ASSERT_THAT(select, IsOk());
  EXPECT_EQ(select->kind(), v1::UI_KIND_SELECT);
  EXPECT_EQ(select->selected_index(), 1);
  EXPECT_EQ(select->selected(), "green");
  EXPECT_TRUE(select->mocked());

  absl::StatusOr<v1::AskResponse> input = AnswerMockUi(&scenario, Ask(v1::UI_KIND_INPUT));
  ASSERT_THAT(input, IsOk());
  EXPECT_EQ(input->kind(), v1::UI_KIND_INPUT);
  EXPECT_EQ(input->text(), "typed");

  absl::StatusOr<v1::AskResponse> editor = AnswerMockUi(&scenario, Ask(v1::UI_KIND_EDITOR));
  ASSERT_THAT(editor, IsOk());
  EXPECT_EQ(editor->kind(), v1::UI_KIND_EDITOR);
  EXPECT_EQ(editor->text(), "edited");
  EXPECT_TRUE(editor->mocked());
}

TEST(AnswerMockUiTest, WithoutAScenarioAnswersTheDefaults) {
  absl::StatusOr<v1::AskResponse> confirm = AnswerMockUi(nullptr, Ask(v1::UI_KIND_CONFIRM));
  ASSERT_THAT(confirm, IsOk());
  EXPECT_TRUE(confirm->confirmed());
  EXPECT_TRUE(confirm->mocked());

  absl::StatusOr<v1::AskResponse> select = AnswerMockUi(nullptr, Ask(v1::UI_KIND_SELECT, {"only"}));
  ASSERT_THAT(select, IsOk());
  EXPECT_EQ(select->selected_index(), 0);
  EXPECT_EQ(select->selected(), "only");

  absl::StatusOr<v1::AskResponse> input = AnswerMockUi(nullptr, Ask(v1::UI_KIND_INPUT));
  ASSERT_THAT(input, IsOk());
  EXPECT_EQ(input->text(), "");
}

TEST(AnswerMockUiTest, KindIsRequired) {
  EXPECT_THAT(AnswerMockUi(nullptr, Ask(v1::UI_KIND_UNSPECIFIED)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "kind: required (confirm, select, input or editor)"));
  EXPECT_THAT(AnswerMockUi(nullptr, Ask(static_cast<v1::UiKind>(9))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown value 9")));
}

TEST(AnswerMockUiTest, SelectNeedsItems) {
  EXPECT_THAT(
      AnswerMockUi(nullptr, Ask(v1::UI_KIND_SELECT)),
      StatusIs(absl::StatusCode::kInvalidArgument, "items: select needs at least one item"));
}

TEST(AnswerMockUiTest, SelectIndexPastTheItemsIsInvalidArgument) {
  const Scenario scenario = MustLoad(kMocks);  // select: 1
  EXPECT_THAT(AnswerMockUi(&scenario, Ask(v1::UI_KIND_SELECT, {"only"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "mock_ui.select is 1 but the request has only 1 item (indexes start at 0)"));
}

}  // namespace
}  // namespace scenario
}  // namespace understudy
