// httplib_server: the cpp-httplib (Debian 0.11.4, shared -lcpp-httplib)
// candidate for understudy's OpenAI/Anthropic-compatible HTTP listener, kept
// as the HTTP baseline of the benchmark suite.
//
// Contract:
//   * Listens on 127.0.0.1:--port (0 = an ephemeral port). Once listening it
//     prints exactly one line "listening on PORT" to stdout and flushes, so a
//     driver can read the port.
//   * POST /v1/chat/completions whose body contains the substring
//     "stream":true (a plain substring check, no JSON parsing: the baseline
//     must not pay for a parser the bodies do not need; it matches
//     bench::kChatStreamRequestBody and not bench::kChatRequestBody) -> 200,
//     text/event-stream, chunked; bench::SseChatEvent(0..199), all at once,
//     one chunk per event, as fast as the socket takes them.
//     When the body also contains "short answer" (bench::
//     kChatShortStreamRequestBody): bench::SseShortEvent(0..10) instead, the
//     same way.
//   * Any other POST /v1/chat/completions -> 200, application/json,
//     bench::kChatCompletionBody.
//   * POST /v1/responses, told apart the same way (bench::
//     kResponsesStreamRequestBody vs kResponsesRequestBody): the stream ->
//     200, text/event-stream, chunked; bench::ResponsesEvent(0..19), all at
//     once, one chunk per event; otherwise -> 200, application/json,
//     bench::kResponseObjectBody.
//   * GET /stream -> 200, text/event-stream, chunked; bench::SseEvent(0..19),
//     event 0 at once, then one every 50 ms. Each open stream holds one pool
//     thread (blocking sleep), which is how cpp-httplib streams.
//   * Anything else -> 404 (library default).
//   * Exits 0 on SIGINT/SIGTERM or after --max-seconds (default 900), so a
//     forgotten server stops by itself.
//
// Settings, and why:
//   * set_tcp_nodelay(true): without it small answers wait ~40 ms on delayed
//     ACKs (see shared/docs/STYLE.md).
//   * set_keep_alive_max_count(--keepalive-max, default 100000): the library
//     default (5) closes every connection after 5 requests, which rotates
//     connections through the pool and hides that each open keep-alive
//     connection owns a pool thread.
//   * --threads N: pool size; 0 (default) keeps the library default,
//     max(8, hardware_concurrency - 1) = 8 on a 2-core machine.
//
// Thread safety: handlers touch only immutable data.
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_bodies.h"

namespace {

namespace bench = ::understudy::bench;

struct Flags {
  int port = 0;
  int threads = 0;  // 0 = library default.
  size_t keepalive_max = 100000;
  int max_seconds = 900;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      size_t n = std::strlen(name);
      if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
        return argv[i] + n + 1;
      return nullptr;
    };
    if (const char* v = value("--port")) {
      f.port = std::atoi(v);
    } else if (const char* v = value("--threads")) {
      f.threads = std::atoi(v);
    } else if (const char* v = value("--keepalive-max")) {
      f.keepalive_max = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--max-seconds")) {
      f.max_seconds = std::atoi(v);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--port=0] [--threads=0] "
                   "[--keepalive-max=100000] [--max-seconds=900]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);

  // Block the stop signals in every thread (the pool inherits this mask) and
  // take them synchronously in a watcher thread below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  httplib::Server server;
  if (flags.threads > 0) {
    const size_t n = static_cast<size_t>(flags.threads);
    server.new_task_queue = [n] { return new httplib::ThreadPool(n); };
  }
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(flags.keepalive_max);

  // Built once, so a streaming answer costs only its writes.
  static const std::vector<std::string> chat_events = [] {
    std::vector<std::string> events;
    for (int i = 0; i < bench::kSseChatEventCount; ++i)
      events.push_back(bench::SseChatEvent(i));
    return events;
  }();
  static const std::vector<std::string> short_chat_events = [] {
    std::vector<std::string> events;
    for (int i = 0; i < bench::kSseShortEventCount; ++i)
      events.push_back(bench::SseShortEvent(i));
    return events;
  }();
  static const std::vector<std::string> responses_events = [] {
    std::vector<std::string> events;
    for (int i = 0; i < bench::kResponsesEventCount; ++i)
      events.push_back(bench::ResponsesEvent(i));
    return events;
  }();
  // The handler of one route: `body` as JSON, or for a body that asks for a
  // stream, `events` all at once, one chunk each (`short_events` instead
  // when the body asks for the short answer and the route has one). All
  // outlive the server.
  auto answer = [](std::string_view body,
                   const std::vector<std::string>& events,
                   const std::vector<std::string>* short_events = nullptr) {
    return [body, &events, short_events](const httplib::Request& req,
                                         httplib::Response& res) {
      if (req.body.find(R"("stream":true)") == std::string::npos) {
        res.set_content(body.data(), body.size(), "application/json");
        return;
      }
      const std::vector<std::string>& stream =
          short_events != nullptr &&
                  req.body.find("short answer") != std::string::npos
              ? *short_events
              : events;
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [&stream](size_t /*offset*/, httplib::DataSink& sink) {
            for (const std::string& event : stream) {
              if (!sink.write(event.data(), event.size())) return false;
            }
            sink.done();
            return true;
          });
    };
  };
  server.Post(
      std::string(bench::kChatCompletionPath),
      answer(bench::kChatCompletionBody, chat_events, &short_chat_events));
  server.Post(std::string(bench::kResponsesPath),
              answer(bench::kResponseObjectBody, responses_events));

  server.Get(std::string(bench::kStreamPath), [](const httplib::Request&,
                                                 httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [next = 0](size_t /*offset*/, httplib::DataSink& sink) mutable {
          if (next > 0) std::this_thread::sleep_for(bench::kSseEventInterval);
          const std::string event = bench::SseEvent(next);
          if (!sink.write(event.data(), event.size())) return false;
          if (++next == bench::kSseEventCount) sink.done();
          return true;
        });
  });

  const int port =
      flags.port == 0
          ? server.bind_to_any_port("127.0.0.1")
          : (server.bind_to_port("127.0.0.1", flags.port) ? flags.port : -1);
  if (port < 0) {
    std::fprintf(stderr, "bind to 127.0.0.1:%d failed\n", flags.port);
    return 1;
  }
  std::printf("listening on %d\n", port);
  std::fflush(stdout);

  std::thread watcher([&] {
    timespec limit{flags.max_seconds, 0};
    sigtimedwait(&stop_signals, nullptr, &limit);  // Signal or time limit.
    server.stop();
  });
  server.listen_after_bind();
  kill(getpid(), SIGTERM);  // Wakes the watcher if listen ended on its own.
  watcher.join();
  return 0;
}
