// Complete and StreamComplete (the contract is engine.h): Decide, then
// answer from what it chose, or forward to the gRPC upstream of the options
// and relay its answer through FinishForward.
#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/env.h"
#include "base/log.h"
#include "engine/engine.h"
#include "engine/run_state.h"
#include "provider/chunks.h"
#include "upstream/upstream.h"

namespace understudy {
namespace engine {

namespace {

upstream::UpstreamCall UpstreamCallFor(const CallInfo& call) {
  upstream::UpstreamCall out;
  out.agent = call.agent;
  out.headers = call.forward_headers;
  out.deadline = call.deadline;
  return out;
}

absl::Status NoGrpcUpstream() {
  return absl::FailedPreconditionError(
      "no gRPC upstream to forward to: start the server with --upstream grpc://HOST:PORT");
}

void RunAfter(Env* env, absl::Duration delay, std::function<void()> f) {
  if (delay <= absl::ZeroDuration()) return f();
  env->ScheduleAfter(delay, std::move(f));
}

}  // namespace

void Engine::Complete(const CallInfo& call, const v1::CompletionRequest& request,
                      std::function<void(absl::StatusOr<ResponsePtr>)> done) {
  absl::StatusOr<Decision> decided = Decide(call, request, /*streamed=*/false);
  if (!decided.ok()) return done(decided.status());
  auto decision = std::make_shared<Decision>(*std::move(decided));
  RunAfter(options_.env, decision->delay, [this, call, decision, done = std::move(done)]() mutable {
    if (const ScriptedError* error = decision->As<ScriptedError>()) return done(error->status);
    if (const MissAfterDelay* miss = decision->As<MissAfterDelay>()) return done(miss->status);
    if (const HangUntilReleased* hang = decision->As<HangUntilReleased>()) {
      return hang->hang->Wait([done = std::move(done)](absl::Status s) { done(s); });
    }
    if (decision->disconnect_after >= 0) return done(DisconnectStatus());
    if (const ReplyFromExchange* reply = decision->As<ReplyFromExchange>()) {
      const v1::Exchange* ex = reply->exchange;
      if (ex->has_error()) return done(StatusFromRecorded(ex->error()));
      // Alias into the immutable recording, which the keepalive holds.
      return done(ResponsePtr(reply->keepalive, &ex->response()));
    }
    if (options_.upstream == nullptr) return done(NoGrpcUpstream());
    // std::function needs a copyable callable: share the ticket's holder.
    auto ticket = std::make_shared<std::unique_ptr<ForwardTicket>>(
        std::move(decision->As<ForwardUpstream>()->ticket));
    const v1::CompletionRequest& forwarded = (*ticket)->request();
    options_.upstream->Complete(
        UpstreamCallFor(call), forwarded,
        [this, ticket, done = std::move(done)](absl::StatusOr<v1::CompletionResponse> r) mutable {
          v1::Exchange exchange;
          if (r.ok()) *exchange.mutable_response() = *r;
          auto response = r.ok() ? std::make_shared<const v1::CompletionResponse>(std::move(*r))
                                 : nullptr;
          // The engine outlives every forwarded call: EndRun waits for them.
          FinishForward(std::move(*ticket), std::move(exchange), r.status(),
                        [response, done = std::move(done)](absl::Status s) {
                          if (s.ok()) {
                            done(ResponsePtr(response));
                          } else {
                            done(s);
                          }
                        });
        });
  });
}

void Engine::StreamComplete(const CallInfo& call, const v1::CompletionRequest& request,
                            std::shared_ptr<ChunkSink> sink) {
  absl::StatusOr<Decision> decided = Decide(call, request, /*streamed=*/true);
  if (!decided.ok()) return sink->OnFinish(decided.status());
  auto decision = std::make_shared<Decision>(*std::move(decided));
  RunAfter(options_.env, decision->delay, [this, call, decision, sink] {
    if (const ScriptedError* error = decision->As<ScriptedError>()) {
      return sink->OnFinish(error->status);
    }
    if (const MissAfterDelay* miss = decision->As<MissAfterDelay>()) {
      return sink->OnFinish(miss->status);
    }
    if (const HangUntilReleased* hang = decision->As<HangUntilReleased>()) {
      return hang->hang->Wait([sink](absl::Status s) { sink->OnFinish(s); });
    }
    const int64_t limit = decision->disconnect_after;
    if (const ReplyFromExchange* reply = decision->As<ReplyFromExchange>()) {
      const v1::Exchange* ex = reply->exchange;
      const absl::Time start = options_.env->Now();
      const double speed = decision->speed;
      int64_t sent = 0;
      if (ex->chunks_size() > 0) {
        for (const v1::CompletionChunk& chunk : ex->chunks()) {
          if (limit >= 0 && sent >= limit) break;
          absl::Time when =
              speed > 0 ? start + absl::Microseconds(static_cast<int64_t>(
                                      static_cast<double>(chunk.offset_micros()) / speed))
                        : absl::InfinitePast();
          sink->OnChunk(ChunkPtr(reply->keepalive, &chunk), when);
          ++sent;
        }
      } else if (!ex->has_error() && limit != 0) {
        sink->OnChunk(reply->answer_chunk != nullptr
                          ? ChunkPtr(reply->keepalive, reply->answer_chunk)
                          : std::make_shared<const v1::CompletionChunk>(
                                provider::ChunkFromResponse(ex->response())),
                      absl::InfinitePast());
      }
      if (limit >= 0) return sink->OnFinish(DisconnectStatus());
      return sink->OnFinish(ex->has_error() ? StatusFromRecorded(ex->error()) : absl::OkStatus());
    }
    if (limit >= 0) return sink->OnFinish(DisconnectStatus());
    if (options_.upstream == nullptr) return sink->OnFinish(NoGrpcUpstream());
    auto ticket = std::make_shared<std::unique_ptr<ForwardTicket>>(
        std::move(decision->As<ForwardUpstream>()->ticket));
    // Chunks as they arrive, with their offsets: what the caller gets is what
    // is stored, so a replay gives the same bytes. The latest chunk is held
    // back until the next one comes, and the last one until the exchange is
    // committed: a caller that has the whole answer knows it is recorded
    // (kill -9 between the two would otherwise lose an answer the client
    // already had).
    auto exchange = std::make_shared<v1::Exchange>();
    auto held = std::make_shared<ChunkPtr>();
    // A caller that goes away, or stops reading while the upstream keeps
    // sending, cancels the upstream call; nothing is recorded then.
    upstream::UpstreamCall upstream_call = UpstreamCallFor(call);
    upstream_call.cancel = std::make_shared<upstream::UpstreamCancel>();
    auto cut = std::make_shared<absl::Status>();  // why the relay was cut
    const absl::Time start = (*ticket)->start();
    Env* env = options_.env;
    const size_t max_backlog = options_.max_relay_backlog_bytes;
    std::shared_ptr<upstream::UpstreamCancel> cancel = upstream_call.cancel;
    options_.upstream->StreamComplete(
        upstream_call, (*ticket)->request(),
        [exchange, held, sink, start, env, cancel, cut, max_backlog,
         run = (*ticket)->run_](const v1::CompletionChunk& chunk) {
          if (!cut->ok()) return;
          v1::CompletionChunk* kept = exchange->add_chunks();
          *kept = chunk;
          kept->set_offset_micros(absl::ToInt64Microseconds(env->Now() - start));
          if (*held != nullptr) sink->OnChunk(std::move(*held), absl::InfinitePast());
          *held = std::make_shared<const v1::CompletionChunk>(*kept);
          if (sink->cancelled()) {
            *cut = absl::CancelledError("the client went away");
            cancel->Cancel();
          } else if (const size_t pending = sink->pending_bytes(); pending > max_backlog) {
            *cut = absl::ResourceExhaustedError(absl::StrCat(
                "the client is not reading: ", pending, " bytes of this answer wait for it (at most ",
                max_backlog, "); the upstream call was cancelled and nothing was recorded"));
            Log(LogLevel::kWarning, "relay_cut",
                {{"run", run->id()}, {"pending_bytes", absl::StrCat(pending)}});
            cancel->Cancel();
          }
        },
        [this, ticket, exchange, held, sink, cut](absl::Status status) {
          *exchange->mutable_response() = provider::AssembleResponse(exchange->chunks());
          if (!cut->ok()) {
            // Cut here: not recorded (a cancelled call never is), and the
            // caller learns why.
            held->reset();
            FinishForward(std::move(*ticket), std::move(*exchange), absl::CancelledError("cut"),
                          [sink, cut](absl::Status) { sink->OnFinish(*cut); });
            return;
          }
          FinishForward(std::move(*ticket), std::move(*exchange), status,
                        [held, sink, status](absl::Status committed) {
                          // Only a committed (or deliberately unrecorded)
                          // answer is completed; a failed commit ends the
                          // stream with its error instead of the last chunk.
                          const bool recording_failed = committed != status;
                          if (*held != nullptr && !recording_failed) {
                            sink->OnChunk(std::move(*held), absl::InfinitePast());
                          }
                          sink->OnFinish(committed);
                        });
        });
  });
}

}  // namespace engine
}  // namespace understudy
