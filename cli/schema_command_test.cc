#include "cli/schema_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "validation/schemas.h"

namespace understudy {
namespace cli {
namespace {

TEST(SchemaCommandTest, PrintsTheEmbeddedSchema) {
  for (const std::string& kind : validation::SchemaKinds()) {
    std::ostringstream out, err;
    EXPECT_EQ(Schema(kind, out, err), 0) << kind;
    EXPECT_EQ(out.str(), *validation::SchemaText(kind));
    EXPECT_EQ(err.str(), "");
  }
}

TEST(SchemaCommandTest, UnknownKindIsAUsageErrorListingTheKinds) {
  std::ostringstream out, err;
  EXPECT_EQ(Schema("scenarios", out, err), 2);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(),
            "understudy: unknown schema kind \"scenarios\"; kinds: scenario, session, sim, sim-meow, spec\n");
}

TEST(SchemaCommandTest, AFailedWriteIsReported) {
  std::ostringstream out, err;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(Schema("spec", out, err), 3);
  EXPECT_EQ(err.str(), "understudy: cannot write the schema\n");
}

}  // namespace
}  // namespace cli
}  // namespace understudy
