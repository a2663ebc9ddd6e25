#include "base/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace understudy {
namespace {

using ::testing::HasSubstr;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/base_files_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)!std::system(("rm -rf " + dir_).c_str()); }
  std::string dir_;
};

TEST_F(FilesTest, ReadsARegularFileWithinTheBound) {
  std::ofstream(dir_ + "/a.yaml") << "caf\xc3\xa9\n";
  absl::StatusOr<std::string> text = ReadRegularFile(dir_ + "/a.yaml", 6);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "caf\xc3\xa9\n");
  EXPECT_THAT(ReadRegularFile(dir_ + "/a.yaml", 5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("larger than the 5 bytes")));
}

TEST_F(FilesTest, RefusesWhatIsNotARegularFile) {
  EXPECT_THAT(ReadRegularFile(dir_ + "/missing", 10),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no such file: ")));
  EXPECT_THAT(ReadRegularFile(dir_, 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a directory, not a file")));
  // A FIFO with no writer would block a plain open: refused at once.
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  EXPECT_THAT(ReadRegularFile(dir_ + "/fifo", 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a regular file")));
}

TEST_F(FilesTest, WritesAtomicallyAndLeavesNothingOnFailure) {
  EXPECT_THAT(WriteFileAtomically(dir_ + "/out.txt", "x"), IsOk());
  EXPECT_EQ(*ReadRegularFile(dir_ + "/out.txt", 10), "x");
  // A directory where the file should go: the old state stays, no temp file.
  ASSERT_EQ(::mkdir((dir_ + "/d").c_str(), 0700), 0);
  EXPECT_THAT(WriteFileAtomically(dir_ + "/d", "y"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(::access((dir_ + "/d.tmp." + std::to_string(::getpid())).c_str(), F_OK), -1);
}

}  // namespace
}  // namespace understudy
