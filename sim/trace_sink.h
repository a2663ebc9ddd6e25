// The simulated agent's trace events (sim.state, sim.prompt, ...; docs/sim.md
// "Trace events"), sent to understudy's Traces.Emit in the order they were
// emitted, by a thread of their own so that the terminal never waits on the
// network.
//
//   TraceSink sink({.addr = "127.0.0.1:7000", .run = "run-1", .agent = "coder"});
//   sink.Emit("sim.state", {{"understudy.sim.state", "IDLE"}});
//   ...
//   sink.Flush(absl::Seconds(1));   // at exit: what is queued, within a bound
//
// A sink with no address or no run is disabled: Emit does nothing. At most
// `max_queue` events wait; beyond that new ones are dropped and counted.
// Each call has `call_deadline`; a failed call is reported once through
// `on_error` (later failures only counted), and the next event is tried.
// Attribute values are sent as valid UTF-8 (ill-formed bytes become U+FFFD).
//
// Thread-safe.
#ifndef UNDERSTUDY_SIM_TRACE_SINK_H_
#define UNDERSTUDY_SIM_TRACE_SINK_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace sim {

using TraceAttributes = std::map<std::string, std::string>;

struct TraceSinkOptions {
  std::string addr;   // HOST:PORT of understudy's gRPC listener; "" disables
  std::string run;    // the run the events join; "" disables
  std::string agent;  // the events' agent
  size_t max_queue = 10000;
  absl::Duration call_deadline = absl::Seconds(2);
  // Called (from the sender thread) with the first failure's message.
  std::function<void(const std::string&)> on_error;
};

class TraceSink {
 public:
  // A sink that dials `options.addr` on first use (insecure channel).
  explicit TraceSink(TraceSinkOptions options);
  // A sink sending through `stub` (tests); disabled when `stub` is null.
  TraceSink(TraceSinkOptions options, std::unique_ptr<v1::Traces::StubInterface> stub);
  // Sends what is queued for up to one second — no wait at all when a Flush
  // already ran out of time (an unresponsive server costs the exit one
  // bound, not two) — then cancels the call in flight.
  ~TraceSink();
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;

  bool enabled() const { return enabled_; }
  // Queues one event; never blocks on the network.
  void Emit(std::string kind, TraceAttributes attributes);
  // Waits until every event queued so far was sent (or failed), at most
  // `timeout`. true when they all were.
  bool Flush(absl::Duration timeout);
  // Events dropped because the queue was full; calls that failed.
  size_t dropped() const;
  size_t failed() const;

 private:
  void SendLoop();

  const TraceSinkOptions options_;
  const bool enabled_;
  mutable absl::Mutex mu_;
  std::unique_ptr<v1::Traces::StubInterface> stub_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::EmitRequest> queue_ ABSL_GUARDED_BY(mu_);
  bool sending_ ABSL_GUARDED_BY(mu_) = false;  // a call is in flight
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool flush_timed_out_ ABSL_GUARDED_BY(mu_) = false;  // a Flush gave up
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  size_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sender_;
};

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_TRACE_SINK_H_
