#include "validation/schemas.h"

#include <fstream>
#include <sstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace understudy {
namespace validation {
namespace {

using ::testing::ElementsAre;

TEST(SchemasTest, KnowsTheFourKindsSorted) {
  EXPECT_THAT(SchemaKinds(), ElementsAre("scenario", "session", "sim", "sim-meow", "spec"));
}

TEST(SchemasTest, EachKindIsAJsonSchemaOfItsVersion) {
  const struct {
    const char* kind;
    const char* id;
  } kCases[] = {
      {"scenario", "https://understudy.dev/schemas/scenario/v1.json"},
      {"spec", "https://understudy.dev/schemas/spec/v1.json"},
      {"session", "https://understudy.dev/schemas/session/v1.json"},
      {"sim", "https://understudy.dev/schemas/sim/v1.json"},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<absl::string_view> text = SchemaText(c.kind);
    ASSERT_THAT(text, IsOk()) << c.kind;
    ASSERT_FALSE(text->empty());
    EXPECT_EQ(text->back(), '\n') << c.kind;
    const nlohmann::json schema = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(schema.is_object()) << c.kind;
    EXPECT_EQ(schema.value("$schema", ""), "https://json-schema.org/draft/2020-12/schema");
    EXPECT_EQ(schema.value("$id", ""), c.id);
    EXPECT_EQ(schema.value("additionalProperties", true), false) << c.kind;
  }
  // The versions the validators read.
  EXPECT_EQ(nlohmann::json::parse(*SchemaText("scenario"))["properties"]["schema"]["const"],
            "understudy.scenario/v1");
  EXPECT_EQ(nlohmann::json::parse(*SchemaText("spec"))["properties"]["schema"]["const"],
            "understudy.spec/v1");
  EXPECT_EQ(nlohmann::json::parse(*SchemaText("sim"))["properties"]["schema"]["const"],
            "understudy.sim/v1");
}

#ifdef UNDERSTUDY_SCHEMA_DIR
TEST(SchemasTest, EmbedsTheFilesByteForByte) {
  for (const std::string& kind : SchemaKinds()) {
    std::ifstream in(std::string(UNDERSTUDY_SCHEMA_DIR) + "/" + kind + ".v1.json",
                     std::ios::binary);
    ASSERT_TRUE(in) << kind;
    std::ostringstream file;
    file << in.rdbuf();
    EXPECT_EQ(*SchemaText(kind), file.str()) << kind;
  }
}
#endif

TEST(SchemasTest, UnknownKindNamesTheKinds) {
  EXPECT_THAT(SchemaText("scenarios"),
              StatusIs(absl::StatusCode::kNotFound,
                       "unknown schema kind \"scenarios\"; kinds: scenario, session, sim, sim-meow, spec"));
  EXPECT_THAT(SchemaText(""), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace validation
}  // namespace understudy
