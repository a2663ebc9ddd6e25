// fake_model: a scripted upstream model for trying understudy without a real
// provider (see the README quickstart). Serves understudy.v1.Model with the
// three-agent review loop of tests/fakes/fake_model.h until SIGINT/SIGTERM.
//
//   fake_model --listen 127.0.0.1:0
//
// The first stdout line is `fake_model listening HOST:PORT`. Exit codes: 0
// after a signal, 2 usage error, 3 cannot listen.
#include <signal.h>

#include <cstring>
#include <iostream>
#include <string>

#include "tests/fakes/fake_model.h"

namespace {

constexpr char kUsage[] =
    "usage: fake_model [--listen HOST:PORT]\n"
    "  Serves understudy.v1.Model with a scripted orchestrator/executor/reviewer\n"
    "  loop (answers depend only on the agent and the request).\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:7001; port 0\n"
    "                      picks a free port, printed on the first stdout line)\n";

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:7001";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--listen" && i + 1 < argc) {
      listen = argv[++i];
    } else if (arg.rfind("--listen=", 0) == 0) {
      listen = arg.substr(std::strlen("--listen="));
    } else {
      std::cerr << "fake_model: unknown argument \"" << arg << "\"\n" << kUsage;
      return 2;
    }
  }

  // Block the signals before gRPC starts its threads so sigwait gets them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto fake = understudy::fakes::FakeModel::Start(listen);
  if (!fake.ok()) {
    std::cerr << "fake_model: " << fake.status().message() << "\n";
    return 3;
  }
  std::cout << "fake_model listening " << (*fake)->address() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  (*fake)->Stop();
  std::cerr << "fake_model: stopped after " << (*fake)->calls() << " calls\n";
  return 0;
}
