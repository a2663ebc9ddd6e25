// The `model` behaviour's brain (docs/sim.md "Model-backed behaviour"): the
// prompt goes to understudy's Model.Complete as the agent's request, so a
// recorded or scripted model session drives the simulated terminal agent.
//
//   std::unique_ptr<ModelBackend> model = NewGrpcModelBackend({addr, run});
//   absl::StatusOr<std::unique_ptr<ModelCall>> call =
//       model->Start({agent, model, system, prompt});
//   poll(... (*call)->ready_fd() ...);       // alongside the terminal, signals
//   std::optional<absl::StatusOr<ModelAnswer>> answer = (*call)->TakeResult();
//   call->reset();  // before the answer: cancels it, its late answer dropped
//
// The call runs on a thread of its own (ModelCall) because the simulator is a
// single-threaded poll loop that must keep reading the terminal and the
// signals while the server holds the request (a scenario `hang`, a slow
// server): Escape cancels the call, SIGTERM or a closed terminal end the
// session within a second.
//
// ModelBackend is an interface so that the simulator's tests answer without a
// server; ModelCall does the threading for every backend.
#ifndef UNDERSTUDY_SIM_MODEL_BACKEND_H_
#define UNDERSTUDY_SIM_MODEL_BACKEND_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace understudy {
namespace sim {

struct ModelRequest {
  std::string agent;          // call metadata understudy-agent ("" none)
  std::string model;          // CompletionRequest.model
  std::string system_prompt;  // a system message first when not empty
  std::string prompt;         // the user message
};

struct ModelToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as the model wrote it
};

struct ModelAnswer {
  std::string text;
  std::vector<ModelToolCall> tool_calls;
};

// Whether one model call was cancelled: set by the call's owner (its thread),
// seen by the call's work (on the call's thread), which can also have a
// function run at the moment of cancellation to stop what it is blocked in.
// Thread-safe.
class ModelCancellation {
 public:
  ModelCancellation() = default;
  ModelCancellation(const ModelCancellation&) = delete;
  ModelCancellation& operator=(const ModelCancellation&) = delete;

  // Marks the call cancelled and runs the canceller set, if any. Later calls
  // do nothing.
  void Cancel();
  bool cancelled() const;
  // Until ClearCanceller, Cancel runs `canceller` on the cancelling thread
  // while holding this object's lock: it must be quick and must not call back
  // into this object (grpc::ClientContext::TryCancel is such a function).
  // false, and `canceller` is dropped unrun, when already cancelled. The
  // work clears it before it returns (ModelCall does too, as a safety net).
  bool SetCanceller(std::function<void()> canceller);
  // Once it returns, the canceller is neither running nor going to run, so
  // what it refers to (a ClientContext on the work's stack) may go.
  void ClearCanceller();
  // Blocks until cancelled, at most `timeout`; whether it was cancelled.
  bool WaitForCancel(absl::Duration timeout) const;

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> canceller_ ABSL_GUARDED_BY(mu_);
};

// One model call under way on a thread of its own. The object belongs to the
// thread that started it (the simulator's loop thread), which polls ready_fd
// and takes the result: it is thread-compatible. What it shares with the
// call's thread (the result, the cancellation, the wake-up descriptor) is
// behind locks or thread-safe, and owned jointly, so either side may go first.
class ModelCall {
 public:
  // The call itself, run once on the call's thread. It must return soon after
  // `cancellation` is cancelled (what it returns then is dropped), and must
  // own what it uses or use only what outlives the call's thread: a call that
  // has not ended within kCancelWait of its cancellation is left to end alone.
  using Work = std::function<absl::StatusOr<ModelAnswer>(ModelCancellation& cancellation)>;

  // How long the destructor waits for a cancelled call's thread to end.
  static constexpr absl::Duration kCancelWait = absl::Milliseconds(250);

  // Starts `work` on a new thread. RESOURCE_EXHAUSTED when no thread or no
  // descriptor could be had (then `work` never runs).
  static absl::StatusOr<std::unique_ptr<ModelCall>> Start(Work work);

  // Cancels the call unless it has ended, and waits up to kCancelWait for its
  // thread; past that the thread is detached and ends alone, its result
  // dropped. Never blocks longer than that.
  ~ModelCall();
  ModelCall(const ModelCall&) = delete;
  ModelCall& operator=(const ModelCall&) = delete;

  // Readable once the result is in, and from then on (never read from: poll
  // it, then TakeResult). Valid while this object lives.
  int ready_fd() const;
  // The work's result once it is in, the first time it is asked for;
  // std::nullopt before (and after).
  std::optional<absl::StatusOr<ModelAnswer>> TakeResult();

 private:
  struct Shared;
  ModelCall(std::shared_ptr<Shared> shared, std::thread thread);

  const std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

// Makes model calls. Start is called from one thread (the simulator's loop);
// the calls' work may still be running, on their threads, when the next Start
// comes or when the backend is destroyed (a cancelled call that has not ended
// in time), so work must not refer to the backend itself.
class ModelBackend {
 public:
  virtual ~ModelBackend() = default;
  // Starts `request`. The call's result is the answer, or the call's error
  // (NOT_FOUND for a replay miss, UNAVAILABLE when the server cannot be
  // reached, DEADLINE_EXCEEDED past the deadline, FAILED_PRECONDITION when no
  // address was given, CANCELLED once cancelled), its message naming what
  // failed. An error here only when the call could not be started.
  virtual absl::StatusOr<std::unique_ptr<ModelCall>> Start(const ModelRequest& request) = 0;
};

struct GrpcModelOptions {
  std::string addr;  // HOST:PORT; "" answers every call FAILED_PRECONDITION
  std::string run;   // call metadata understudy-run ("" the server's default run)
  absl::Duration deadline = absl::Seconds(30);
};

// Model.Complete over an insecure channel, dialled on the first call; a call
// is cancelled with grpc::ClientContext::TryCancel, which ends it at once.
std::unique_ptr<ModelBackend> NewGrpcModelBackend(GrpcModelOptions options);

}  // namespace sim
}  // namespace understudy

#endif  // UNDERSTUDY_SIM_MODEL_BACKEND_H_
