// grpc_echo: the gRPC baseline of bench/run. A bare callback-API server of
// understudy.v1.Model that answers every Complete with one fixed response
// and every StreamComplete with a fixed stream of --chunks chunks — no
// matching, no trace, no storage: what gRPC itself costs on this machine.
// It also serves as the upstream that bench/run records from, so that the
// replayed answer and the baseline's answer are the same bytes.
//
//   grpc_echo [--listen 127.0.0.1:0] [--chunks 200] [--threads 0]
//
// Prints "grpc_echo serving HOST:PORT" as its first stdout line; serves until
// SIGTERM/SIGINT. Only loopback addresses are accepted.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_data.h"
#include "grpcpp/grpcpp.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace bench {
namespace {

class StreamWriter final : public grpc::ServerWriteReactor<v1::CompletionChunk> {
 public:
  explicit StreamWriter(const std::vector<v1::CompletionChunk>* chunks) : chunks_(chunks) {
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (next_ == chunks_->size()) {
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&(*chunks_)[next_++]);
  }
  const std::vector<v1::CompletionChunk>* chunks_;
  size_t next_ = 0;
};

class EchoService final : public v1::Model::CallbackService {
 public:
  explicit EchoService(int chunks) : response_(BenchResponse()), chunks_(BenchChunks(chunks)) {}

  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* context,
                                     const v1::CompletionRequest*,
                                     v1::CompletionResponse* response) override {
    *response = response_;
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<v1::CompletionChunk>* StreamComplete(
      grpc::CallbackServerContext*, const v1::CompletionRequest*) override {
    return new StreamWriter(&chunks_);
  }

 private:
  const v1::CompletionResponse response_;
  const std::vector<v1::CompletionChunk> chunks_;
};

int Usage(const char* why) {
  std::fprintf(stderr, "grpc_echo: %s\nusage: grpc_echo [--listen 127.0.0.1:0] [--chunks N]\n",
               why);
  return 2;
}

}  // namespace
}  // namespace bench
}  // namespace understudy

int main(int argc, char** argv) {
  using understudy::bench::Usage;
  std::string listen = "127.0.0.1:0";
  int chunks = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage(("missing value for " + flag).c_str());
    const std::string value = argv[++i];
    if (flag == "--listen") {
      listen = value;
    } else if (flag == "--chunks") {
      if (!absl::SimpleAtoi(value, &chunks) || chunks < 1 || chunks > 100000) {
        return Usage("--chunks: give 1..100000");
      }
    } else {
      return Usage(("unknown flag " + flag).c_str());
    }
  }
  if (!absl::StartsWith(listen, "127.") && !absl::StartsWith(listen, "[::1]") &&
      !absl::StartsWith(listen, "localhost:")) {
    return Usage("--listen: loopback addresses only");
  }
  understudy::bench::EchoService service(chunks);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "grpc_echo: cannot listen on %s\n", listen.c_str());
    return 3;
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("grpc_echo serving %s:%d\n", host.c_str(), port);
  std::fflush(stdout);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  server->Shutdown();
  return 0;
}
