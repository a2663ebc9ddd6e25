// grpc_load: the gRPC load generator of bench/run. Keeps --concurrency calls
// of understudy.v1.Model in flight over --connections separate HTTP/2
// connections (callback API, a new call the moment one ends) for
// --duration seconds after --warmup, or for exactly --count calls.
//
//   grpc_load --target 127.0.0.1:PORT [--run ID] [--agent NAME]
//             [--connections 4] [--concurrency 16]
//             [--duration 5] [--warmup 1] | [--count N]
//             [--stream] [--text "Plan the next step."] [--label NAME]
//
// A call counts as a success only when it ends OK and its answer carries
// bench::kAnswerMarker (so a fast error or a wrong answer is never a
// result); every other ending is counted by its gRPC status code name
// (WRONG_ANSWER for an OK call without the marker).
//
// Prints a "RESULT key=value ..." line on stdout:
//   label, ok, errors, error_codes (CODE:N,...), seconds, rps (successes per
//   second), p50_us, p99_us, p999_us, max_us (whole-call latency of
//   successes); with --stream also chunks, chunks_per_s, ttfc_p50_us,
//   ttfc_p99_us (time to first chunk).
// Exits 0 when the run completed (errors are results, not failures), 1 when
// no call succeeded, 2 on bad flags. Every call has a 30 s deadline and the
// run ends within --duration + --warmup + 35 s (a --count run within an
// hour).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/bench_data.h"
#include "grpcpp/grpcpp.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWrongAnswer = 17;  // after the 17 gRPC codes 0..16

const char* CodeName(int code) {
  static const char* const kNames[] = {
      "OK",        "CANCELLED",         "UNKNOWN",      "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS",    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",      "INTERNAL",
      "UNAVAILABLE", "DATA_LOSS",       "UNAUTHENTICATED", "WRONG_ANSWER"};
  return code >= 0 && code <= kWrongAnswer ? kNames[code] : "UNKNOWN";
}

struct Options {
  std::string target;
  std::string run;
  std::string agent = "executor";
  int connections = 4;
  int concurrency = 16;
  double duration = 5;
  double warmup = 1;
  int64_t count = 0;  // > 0: exactly this many calls, no warmup
  bool stream = false;
  std::string text = "Plan the next step.";
  std::string label = "grpc";
};

class Load;

// One in-flight call at a time; owned by Load.
struct Slot {
  Load* load = nullptr;
  v1::Model::Stub* stub = nullptr;
  // Unary call state.
  std::unique_ptr<grpc::ClientContext> context;
  v1::CompletionResponse response;
  Clock::time_point start;
  // Results, written only by this slot's calls (one at a time).
  std::vector<uint32_t> latencies_us;
  std::vector<uint32_t> ttfc_us;
  int64_t chunks = 0;
  std::array<int64_t, kWrongAnswer + 1> codes{};
};

class Load {
 public:
  explicit Load(const Options& options) : options_(options), request_(BenchRequest(options.text)) {
    for (int c = 0; c < options.connections; ++c) {
      grpc::ChannelArguments args;
      // Its own subchannel pool: each channel is its own TCP connection.
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      args.SetMaxReceiveMessageSize(64 << 20);
      channels_.push_back(
          grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), args));
      stubs_.push_back(v1::Model::NewStub(channels_.back()));
    }
    slots_.resize(options.concurrency);
    for (int i = 0; i < options.concurrency; ++i) {
      slots_[i].load = this;
      slots_[i].stub = stubs_[i % options.connections].get();
      slots_[i].latencies_us.reserve(1 << 16);
    }
  }

  // Runs the load; returns the process exit code after printing RESULT.
  int Run() {
    // Connect first, so the first calls do not pay for the handshake.
    for (auto& channel : channels_) {
      if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
        std::fprintf(stderr, "grpc_load: cannot connect to %s\n", options_.target.c_str());
        return 1;
      }
    }
    const bool counted = options_.count > 0;
    measuring_.store(counted);
    active_.store(options_.concurrency);
    const Clock::time_point begin = Clock::now();
    for (Slot& slot : slots_) Issue(&slot);
    Clock::time_point window_start = begin;
    Clock::time_point window_end;
    if (!counted) {
      Sleep(options_.warmup);
      window_start = Clock::now();
      measuring_.store(true);
      Sleep(options_.duration);
      measuring_.store(false);
      window_end = Clock::now();
      stopping_.store(true);
    }
    {
      // A counted run lasts as long as its calls take (bounded at an hour);
      // a timed one ends within the 30 s call deadline after its window.
      absl::MutexLock lock(&mu_);
      auto idle = [this] { return active_.load() == 0; };
      mu_.AwaitWithTimeout(absl::Condition(&idle),
                           counted ? absl::Hours(1) : absl::Seconds(35));
    }
    if (counted) window_end = Clock::now();
    if (active_.load() != 0) {
      // Calls still hold the slots: leave without destroying them.
      std::fprintf(stderr, "grpc_load: %d calls still in flight; giving up\n", active_.load());
      std::fflush(stderr);
      std::_Exit(1);
    }
    return Report(std::chrono::duration<double>(window_end - window_start).count());
  }

 private:
  static void Sleep(double seconds) { absl::SleepFor(absl::Seconds(seconds)); }

  // Starts the slot's next call, or retires the slot.
  void Issue(Slot* slot) {
    if (stopping_.load() ||
        (options_.count > 0 && issued_.fetch_add(1) >= options_.count)) {
      if (active_.fetch_sub(1) == 1) {
        absl::MutexLock lock(&mu_);  // wakes Run
      }
      return;
    }
    if (options_.stream) {
      (new StreamCall(slot))->Start();
      return;
    }
    slot->context = NewContext();
    slot->response.Clear();
    slot->start = Clock::now();
    slot->stub->async()->Complete(slot->context.get(), &request_, &slot->response,
                                  [this, slot](grpc::Status status) {
                                    const bool answered =
                                        status.ok() && absl::StrContains(
                                                           slot->response.message().content(),
                                                           kAnswerMarker);
                                    Finished(slot, status, answered, 0);
                                    Issue(slot);
                                  });
  }

  std::unique_ptr<grpc::ClientContext> NewContext() const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!options_.run.empty()) context->AddMetadata("understudy-run", options_.run);
    if (!options_.agent.empty()) context->AddMetadata("understudy-agent", options_.agent);
    return context;
  }

  void Finished(Slot* slot, const grpc::Status& status, bool answered, int64_t chunks) {
    if (!measuring_.load()) return;
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
        Clock::now() - slot->start);
    if (answered) {
      slot->latencies_us.push_back(static_cast<uint32_t>(elapsed.count()));
      slot->chunks += chunks;
      slot->codes[0]++;
    } else {
      slot->codes[status.ok() ? kWrongAnswer : static_cast<int>(status.error_code())]++;
    }
  }

  class StreamCall final : public grpc::ClientReadReactor<v1::CompletionChunk> {
   public:
    explicit StreamCall(Slot* slot) : slot_(slot) {}
    void Start() {
      Load* load = slot_->load;
      context_ = load->NewContext();
      slot_->start = Clock::now();
      slot_->stub->async()->StreamComplete(context_.get(), &load->request_, this);
      StartRead(&chunk_);
      StartCall();
    }
    void OnReadDone(bool ok) override {
      if (!ok) return;
      if (chunks_++ == 0) {
        first_ = Clock::now();
        marked_ = absl::StrContains(chunk_.content(), kAnswerMarker);
      }
      StartRead(&chunk_);
    }
    void OnDone(const grpc::Status& status) override {
      Slot* slot = slot_;
      Load* load = slot->load;
      const bool answered = status.ok() && marked_;
      if (answered && load->measuring_.load()) {
        slot->ttfc_us.push_back(static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(first_ - slot->start).count()));
      }
      load->Finished(slot, status, answered, chunks_);
      delete this;
      load->Issue(slot);
    }

   private:
    Slot* slot_;
    std::unique_ptr<grpc::ClientContext> context_;
    v1::CompletionChunk chunk_;
    int64_t chunks_ = 0;
    bool marked_ = false;
    Clock::time_point first_;
  };

  static uint32_t Percentile(std::vector<uint32_t>& sorted, double p) {
    if (sorted.empty()) return 0;
    size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(i, sorted.size() - 1)];
  }

  int Report(double seconds) {
    std::vector<uint32_t> all, ttfc;
    std::array<int64_t, kWrongAnswer + 1> codes{};
    int64_t chunks = 0;
    for (Slot& s : slots_) {
      all.insert(all.end(), s.latencies_us.begin(), s.latencies_us.end());
      ttfc.insert(ttfc.end(), s.ttfc_us.begin(), s.ttfc_us.end());
      for (size_t c = 0; c < codes.size(); ++c) codes[c] += s.codes[c];
      chunks += s.chunks;
    }
    std::sort(all.begin(), all.end());
    std::sort(ttfc.begin(), ttfc.end());
    int64_t errors = 0;
    std::vector<std::string> named;
    for (size_t c = 1; c < codes.size(); ++c) {
      if (codes[c] == 0) continue;
      errors += codes[c];
      named.push_back(absl::StrCat(CodeName(static_cast<int>(c)), ":", codes[c]));
    }
    const int64_t ok = codes[0];
    std::string line = absl::StrCat(
        "RESULT label=", options_.label, " ok=", ok, " errors=", errors,
        " error_codes=", named.empty() ? "-" : absl::StrJoin(named, ","),
        " seconds=", absl::StrFormat("%.3f", seconds),
        " rps=", absl::StrFormat("%.1f", seconds > 0 ? ok / seconds : 0.0),
        " p50_us=", Percentile(all, 0.50), " p99_us=", Percentile(all, 0.99),
        " p999_us=", Percentile(all, 0.999), " max_us=", all.empty() ? 0 : all.back());
    if (options_.stream) {
      absl::StrAppend(&line, " chunks=", chunks, " chunks_per_s=",
                      absl::StrFormat("%.0f", seconds > 0 ? chunks / seconds : 0.0),
                      " ttfc_p50_us=", Percentile(ttfc, 0.50),
                      " ttfc_p99_us=", Percentile(ttfc, 0.99));
    }
    std::printf("%s\n", line.c_str());
    return ok > 0 ? 0 : 1;
  }

  const Options options_;
  const v1::CompletionRequest request_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Model::Stub>> stubs_;
  std::vector<Slot> slots_;
  std::atomic<bool> measuring_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> issued_{0};
  std::atomic<int> active_{0};
  absl::Mutex mu_;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "grpc_load: %s\n"
               "usage: grpc_load --target HOST:PORT [--run ID] [--agent NAME] [--connections N]\n"
               "                 [--concurrency N] [--duration S] [--warmup S] [--count N]\n"
               "                 [--stream] [--text TEXT] [--label NAME]\n",
               why.c_str());
  return 2;
}

}  // namespace
}  // namespace bench
}  // namespace understudy

int main(int argc, char** argv) {
  using understudy::bench::Usage;
  understudy::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--stream") {
      o.stream = true;
      continue;
    }
    if (i + 1 >= argc) return Usage("missing value for " + flag);
    const std::string v = argv[++i];
    bool ok = true;
    if (flag == "--target") {
      o.target = v;
    } else if (flag == "--run") {
      o.run = v;
    } else if (flag == "--agent") {
      o.agent = v;
    } else if (flag == "--text") {
      o.text = v;
    } else if (flag == "--label") {
      o.label = v;
    } else if (flag == "--connections") {
      ok = absl::SimpleAtoi(v, &o.connections) && o.connections >= 1 && o.connections <= 1024;
    } else if (flag == "--concurrency") {
      ok = absl::SimpleAtoi(v, &o.concurrency) && o.concurrency >= 1 && o.concurrency <= 100000;
    } else if (flag == "--duration") {
      ok = absl::SimpleAtod(v, &o.duration) && o.duration > 0 && o.duration <= 3600;
    } else if (flag == "--warmup") {
      ok = absl::SimpleAtod(v, &o.warmup) && o.warmup >= 0 && o.warmup <= 600;
    } else if (flag == "--count") {
      ok = absl::SimpleAtoi(v, &o.count) && o.count >= 1;
    } else {
      return Usage("unknown flag " + flag);
    }
    if (!ok) return Usage("bad value for " + flag + ": " + v);
  }
  if (o.target.empty()) return Usage("--target is required");
  if (!absl::StartsWith(o.target, "127.") && !absl::StartsWith(o.target, "[::1]") &&
      !absl::StartsWith(o.target, "localhost:")) {
    return Usage("--target: loopback addresses only");
  }
  if (o.concurrency < o.connections) o.connections = o.concurrency;
  understudy::bench::Load load(o);
  return load.Run();
}
