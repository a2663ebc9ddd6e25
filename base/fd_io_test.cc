#include "base/fd_io.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "base/status_matchers.h"
#include "gtest/gtest.h"

namespace understudy {
namespace {

// Both ends of a pipe or a socket pair, closed at the end.
struct Ends {
  int fds[2] = {-1, -1};
  ~Ends() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  int reader() const { return fds[0]; }
  int writer() const { return fds[1]; }
};

void Write(int fd, const std::string& data) {
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
}

std::string Read(int fd) {
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

TEST(UnreadBytesTest, CountsWhatAPipesReaderHasNotRead) {
  Ends pipe;
  ASSERT_EQ(::pipe(pipe.fds), 0);
  EXPECT_EQ(*UnreadBytes(pipe.writer()), 0u);
  Write(pipe.writer(), "hello\n");
  EXPECT_EQ(*UnreadBytes(pipe.writer()), 6u);
  EXPECT_EQ(Read(pipe.reader()), "hello\n");
  EXPECT_EQ(*UnreadBytes(pipe.writer()), 0u);
}

// What Node's child_process gives a child as its stdout: a Unix socket.
TEST(UnreadBytesTest, CountsWhatAUnixSocketsPeerHasNotRead) {
  Ends pair;
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair.fds), 0);
  EXPECT_EQ(*UnreadBytes(pair.writer()), 0u);
  Write(pair.writer(), "hello\n");
  EXPECT_GT(*UnreadBytes(pair.writer()), 0u);
  EXPECT_EQ(Read(pair.reader()), "hello\n");
  EXPECT_EQ(*UnreadBytes(pair.writer()), 0u);
}

TEST(UnreadBytesTest, AFileHasNothingWaiting) {
  char path[] = "/tmp/fd_io_test_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  Write(fd, "hello\n");
  EXPECT_EQ(*UnreadBytes(fd), 0u);
  ::close(fd);
  EXPECT_THAT(UnreadBytes(fd), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(WaitUntilReadTest, ReturnsOnceTheReaderHasReadEverything) {
  Ends pair;
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair.fds), 0);
  EXPECT_THAT(WaitUntilRead(pair.writer(), absl::Now(), -1), IsOk()) << "nothing written";
  Write(pair.writer(), "first\n");
  Write(pair.writer(), "second\n");
  std::string read;
  std::thread reader([&] {
    while (read.size() < 13) read += Read(pair.reader());
  });
  EXPECT_THAT(WaitUntilRead(pair.writer(), absl::Now() + absl::Seconds(30), -1), IsOk());
  reader.join();
  EXPECT_EQ(read, "first\nsecond\n");
}

TEST(WaitUntilReadTest, GivesUpAtTheDeadlineOrOnAWake) {
  Ends pipe;
  ASSERT_EQ(::pipe(pipe.fds), 0);
  Write(pipe.writer(), "never read\n");
  EXPECT_THAT(WaitUntilRead(pipe.writer(), absl::Now() + absl::Milliseconds(20), -1),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  WakePipe wake;
  wake.Wake();
  EXPECT_THAT(WaitUntilRead(pipe.writer(), absl::InfiniteFuture(), wake.read_fd()),
              StatusIs(absl::StatusCode::kCancelled));
}

}  // namespace
}  // namespace understudy
