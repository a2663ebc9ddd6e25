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
//   * POST /api/chat (Ollama; whatever the body) -> 200,
//     application/x-ndjson, chunked; bench::OllamaChatLine(0..199), all at
//     once, one chunk per line.
//   * POST /model/bench-model/converse-stream (Bedrock; whatever the body)
//     -> 200, application/vnd.amazon.eventstream, chunked; one event stream
//     frame per bench::BedrockStreamEvent(0..199) (EventStreamFrame below),
//     all at once, one chunk per frame.
//   * POST /a2a/bench (an A2A agent; whatever the body) -> 200,
//     text/event-stream, chunked; bench::A2aStreamEvent(0..199), all at
//     once, one chunk per event.
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
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
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

// Appends v as 4 bytes, big-endian.
void AppendU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
}

uint32_t Crc32(std::string_view bytes) {
  return static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
            static_cast<uInt>(bytes.size())));
}

// Appends one event stream header whose value is a string (wire type 7).
// Precondition: name < 256 bytes, value < 64 KiB.
void AppendStringHeader(std::string& out, std::string_view name,
                        std::string_view value) {
  out.push_back(static_cast<char>(name.size()));
  out.append(name);
  out.push_back(7);
  out.push_back(static_cast<char>(value.size() >> 8));
  out.push_back(static_cast<char>(value.size() & 0xff));
  out.append(value);
}

// The "application/vnd.amazon.eventstream" frame of one Bedrock event, as
// Bedrock sends it: total length, headers length, the prelude's CRC32, the
// headers :event-type, :content-type and :message-type, the payload, and the
// CRC32 of everything before it (provider/event_stream.h has the layout).
std::string EventStreamFrame(const bench::BedrockEvent& event) {
  std::string headers;
  AppendStringHeader(headers, ":event-type", event.type);
  AppendStringHeader(headers, ":content-type", "application/json");
  AppendStringHeader(headers, ":message-type", "event");
  std::string frame;
  AppendU32(frame,
            static_cast<uint32_t>(16 + headers.size() + event.payload.size()));
  AppendU32(frame, static_cast<uint32_t>(headers.size()));
  AppendU32(frame, Crc32(frame));
  frame += headers;
  frame += event.payload;
  AppendU32(frame, Crc32(frame));
  return frame;
}

// Answers with `events` all at once, chunked, one chunk each, as fast as the
// socket takes them. `events` must outlive the response (they are static).
void SendAllAtOnce(httplib::Response& res, const char* content_type,
                   const std::vector<std::string>& events) {
  res.set_chunked_content_provider(
      content_type, [&events](size_t /*offset*/, httplib::DataSink& sink) {
        for (const std::string& event : events) {
          if (!sink.write(event.data(), event.size())) return false;
        }
        sink.done();
        return true;
      });
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
  static const std::vector<std::string> ollama_lines = [] {
    std::vector<std::string> lines;
    for (int i = 0; i < bench::kOllamaLineCount; ++i)
      lines.push_back(bench::OllamaChatLine(i));
    return lines;
  }();
  static const std::vector<std::string> bedrock_frames = [] {
    std::vector<std::string> frames;
    for (int i = 0; i < bench::kBedrockEventCount; ++i)
      frames.push_back(EventStreamFrame(bench::BedrockStreamEvent(i)));
    return frames;
  }();
  static const std::vector<std::string> a2a_events = [] {
    std::vector<std::string> events;
    for (int i = 0; i < bench::kA2aEventCount; ++i)
      events.push_back(bench::A2aStreamEvent(i));
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
      SendAllAtOnce(res, "text/event-stream", stream);
    };
  };
  server.Post(
      std::string(bench::kChatCompletionPath),
      answer(bench::kChatCompletionBody, chat_events, &short_chat_events));
  server.Post(std::string(bench::kResponsesPath),
              answer(bench::kResponseObjectBody, responses_events));
  server.Post(std::string(bench::kOllamaChatPath),
              [](const httplib::Request&, httplib::Response& res) {
                SendAllAtOnce(res, "application/x-ndjson", ollama_lines);
              });
  server.Post(std::string(bench::kBedrockStreamPath),
              [](const httplib::Request&, httplib::Response& res) {
                SendAllAtOnce(res, "application/vnd.amazon.eventstream",
                              bedrock_frames);
              });
  server.Post(std::string(bench::kA2aStreamPath),
              [](const httplib::Request&, httplib::Response& res) {
                res.set_header("Cache-Control", "no-cache");
                SendAllAtOnce(res, "text/event-stream", a2a_events);
              });

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
