// conn_load: the HTTP/1.1 keep-alive load client of understudy's benchmarks
// (bench/run, bench/http_choice/run.sh). It measures every HTTP server the
// same way -- understudy, the bare cpp-httplib baseline, and peers such as
// aimock and WireMock -- checks every answer before counting it, and reports
// how many responses EACH connection got, so a server that serves some
// connections and starves the rest cannot hide behind a good req/s figure.
//
// Usage:
//   conn_load --port=P [--host=127.0.0.1] [--conns=256] [--duration=10]
//             [--warmup=0] [--rate=0] [--max-requests=50000000]
//             [--path=/v1/chat/completions] [--body-file=FILE]
//             [--header=K:V]... [--expect=STRING]
//             [--sse | --ndjson | --eventstream] [--expect-events=N]
//             [--streams=0]
//
// Flags:
//   --port=P         server port (required).
//   --host=H         IPv4 address; only 127.0.0.0/8 is accepted: this tool
//                    must never load another machine. Default 127.0.0.1.
//   --conns=C        keep-alive connections, all opened at start. Default 256.
//   --streams=S      of those, S (default 0, spread evenly) send
//                    GET /stream back-to-back instead (the paced SSE route of
//                    the http_choice servers, ~1 s per stream); the other
//                    C - S are "request connections" that send the POST.
//   --duration=D     seconds of the measured window. Default 10.
//   --warmup=W       seconds of load before the measured window (default 0).
//                    Everything that completes during it is discarded;
//                    connections stay open across it.
//   --rate=R         total POST requests per second, open loop (default 0 =
//                    closed loop: each request connection sends its next
//                    request as soon as the previous response is complete).
//                    Request k is due at start + k/R; a due request goes out
//                    on the request connection that has been free longest,
//                    or, when every connection is busy, waits for the first
//                    one to free up. Latency then runs from the due time, not
//                    the send time, so time spent queued counts
//                    (coordinated-omission corrected).
//   --max-requests=N stop once N POST responses (of any outcome) completed
//                    in the measured window. Default 50,000,000.
//   --path=PATH      POST target. Default /v1/chat/completions
//                    (bench/run also loads /v1/responses).
//   --body-file=FILE POST these exact bytes. Default bench::kChatRequestBody.
//   --header=K:V     an extra request header (repeatable), sent as "K: V".
//                    A Host or Content-Type given here replaces the default
//                    one (Host: H, Content-Type: application/json);
//                    Content-Length and Transfer-Encoding are not allowed.
//   --expect=STRING  a 2xx response counts as a success only if its body
//                    contains STRING (for chunked bodies: the de-chunked
//                    body; for SSE: anywhere in the whole stream, across
//                    reads and events -- but the raw bytes, so a phrase that
//                    the server splits into several JSON content pieces does
//                    not match). Only the last len(STRING) - 1 bytes are
//                    kept between reads. Without it, only the status is
//                    checked.
//   --sse            POST responses are Server-Sent Event streams. Bodies may
//                    be chunked, Content-Length or close-delimited. Events
//                    are frames ended by a blank line ("\n\n", "\r\n\r\n" or
//                    "\r\r"); blank lines with nothing before them are not
//                    events. A frame counts once whatever lines it holds:
//                    a chat chunk "data: {...}\n\n" and a Responses event
//                    "event: TYPE\ndata: {...}\n\n" are one event each.
//                    A 2xx response with no event at all is wrong.
//   --ndjson         POST responses are newline-delimited JSON streams
//                    (Ollama's application/x-ndjson): an event is a line
//                    ended by "\n" (or "\r\n") with at least one byte
//                    before its end; blank lines are not events, and bytes
//                    after the last "\n" are not one. Otherwise as --sse.
//   --eventstream    POST responses are AWS event streams (Bedrock's
//                    application/vnd.amazon.eventstream): an event is one
//                    whole binary frame, delimited by the total length in
//                    its prelude (big-endian uint32). A frame whose lengths
//                    cannot be (total < 16 or > 16 MiB, or headers longer
//                    than the frame) makes the response wrong; the CRC32s
//                    are not checked (that is the codec's job, and would
//                    cost every server measured the same client CPU), and a
//                    trailing partial frame is not an event. Otherwise as
//                    --sse.
//   --expect-events=N  (with --sse, --ndjson or --eventstream) a 2xx
//                    response with a number of events other than N is
//                    wrong.
//
// Each POST response that completes in the measured window is exactly one of:
// a success (2xx and every expectation met), non2xx, or wrong (2xx but an
// expectation failed). Only successes count in rps and the latency figures.
// Connect failures, resets and malformed responses are errors, not responses.
//
// Runs for W + D seconds from the first connect (never longer than that plus
// one epoll_wait, at most 50 ms), or until --max-requests; responses not
// complete by then are not counted. Then it closes every connection, prints a
// human-readable report and one machine-readable line "RESULT key=value ...",
// and exits 0 -- also if connections starved or answers were wrong: those are
// results, not failures. Exits 1 on bad flags or setup failure.
//
// RESULT fields, in order ("window" = the measured window):
//   conns            C.
//   streams          S, the GET /stream connections.
//   secs             length of the window actually measured, s.
//   requests         successful POST responses in the window.
//   rps              requests / secs.
//   p50_ms p99_ms max_ms
//                    latency of successes, ms (kept for run.sh): request
//                    written (closed loop) or due (--rate) -> response
//                    complete.
//   conn_min conn_med conn_max conn_zero
//                    per request connection, POST responses of any outcome
//                    completed in the window; conn_zero = request connections
//                    that got none.
//   waiting oldest_wait_ms
//                    request connections with a request outstanding at the
//                    end, and the age of the oldest such request.
//   streams_done events stream_zero first_event_max_ms max_gap_ms
//                    GET /stream: completed streams, events received, stream
//                    connections with no event, worst time to first event,
//                    worst gap between two events of one stream (50 ms when
//                    nothing stalls). All over the window.
//   reconnects errors
//                    connections re-opened after the server closed them
//                    (including after each close-delimited body), and connect
//                    failures / resets / malformed responses.
//   non200           responses in the window whose status is not 200.
//   warmup rate      W and R as given.
//   p50_us p99_us p999_us max_us
//                    latency of successes (as p50_ms...), microseconds; from
//                    a log-linear histogram, within 0.1%; max is exact.
//   responses        POST responses completed in the window, any outcome
//                    (= requests + wrong + non2xx).
//   wrong non2xx     see above.
//   backlog          (--rate) requests that were due but had not gone out,
//                    because no connection was free, when the run stopped
//                    (they are in no latency figure); 0 in closed loop.
//   sse              1 with --sse, --ndjson or --eventstream (events are
//                    counted), else 0. The remaining fields are 0 without
//                    one of them, and count that framing's events (SSE
//                    frames, NDJSON lines or event stream frames) -- the
//                    names say "sse" because SSE came first:
//   sse_events       events in the successful responses.
//   events_per_s     sse_events / secs (chunks/s).
//   ttfc_p50_us ttfc_p99_us ttfc_max_us
//                    time to first event of the successful responses: request
//                    written (closed loop) or due (--rate) -> first complete
//                    event received.
//   events_per_resp_min events_per_resp_max
//                    fewest and most events in one 2xx response.
//   framing          none, sse, ndjson or eventstream.
//
// Single-threaded (one epoll loop), so the client uses at most one core.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_bodies.h"

namespace {

namespace bench = ::understudy::bench;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(s));
}

bool SameLetter(char a, char b) {
  return std::tolower(static_cast<unsigned char>(a)) ==
         std::tolower(static_cast<unsigned char>(b));
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), SameLetter);
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(),
                     needle.end(), SameLetter) != haystack.end();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// How POST response bodies are cut into events (--sse, --ndjson,
// --eventstream); kNone: they are not.
enum class Framing { kNone, kSse, kNdjson, kEventStream };

const char* FramingName(Framing f) {
  switch (f) {
    case Framing::kSse:
      return "sse";
    case Framing::kNdjson:
      return "ndjson";
    case Framing::kEventStream:
      return "eventstream";
    case Framing::kNone:
      break;
  }
  return "none";
}

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  int conns = 256;
  int streams = 0;
  double duration_s = 10;
  double warmup_s = 0;
  double rate = 0;  // Requests/s; 0 = closed loop.
  uint64_t max_requests = 50'000'000;
  std::string path = std::string(bench::kChatCompletionPath);
  std::string body = std::string(bench::kChatRequestBody);
  std::vector<std::pair<std::string, std::string>> headers;
  std::string expect;  // Empty = no body check.
  Framing framing = Framing::kNone;
  int expect_events = 0;  // 0 = any number of events (at least one).
};

[[noreturn]] void Usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s\n", why.c_str());
  std::fprintf(stderr,
               "usage: %s --port=P [--host=127.0.0.1] [--conns=256] "
               "[--duration=10] [--warmup=0] [--rate=0] [--max-requests=N] "
               "[--path=/v1/chat/completions] [--body-file=FILE] "
               "[--header=K:V]... [--expect=STRING] "
               "[--sse | --ndjson | --eventstream] [--expect-events=N] "
               "[--streams=0]\n",
               argv0);
  std::exit(1);
}

// The whole of `v` as a number, or a usage error naming the flag.
template <typename T>
T Number(const char* argv0, const char* flag, const char* v) {
  T out{};
  const char* end = v + std::strlen(v);
  const auto [ptr, ec] = std::from_chars(v, end, out);
  if (ec != std::errc() || ptr != end || v == end) {
    Usage(argv0, std::string(flag) + ": not a number: \"" + v + "\"");
  }
  return out;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  auto set_framing = [&](Framing framing) {
    if (f.framing != Framing::kNone && f.framing != framing)
      Usage(argv[0], "--sse, --ndjson and --eventstream exclude each other");
    f.framing = framing;
  };
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      size_t n = std::strlen(name);
      if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=')
        return argv[i] + n + 1;
      return nullptr;
    };
    if (const char* v = value("--host")) {
      f.host = v;
    } else if (const char* v = value("--port")) {
      f.port = Number<int>(argv[0], "--port", v);
    } else if (const char* v = value("--conns")) {
      f.conns = Number<int>(argv[0], "--conns", v);
    } else if (const char* v = value("--streams")) {
      f.streams = Number<int>(argv[0], "--streams", v);
    } else if (const char* v = value("--duration")) {
      f.duration_s = Number<double>(argv[0], "--duration", v);
    } else if (const char* v = value("--warmup")) {
      f.warmup_s = Number<double>(argv[0], "--warmup", v);
    } else if (const char* v = value("--rate")) {
      f.rate = Number<double>(argv[0], "--rate", v);
    } else if (const char* v = value("--max-requests")) {
      f.max_requests = Number<uint64_t>(argv[0], "--max-requests", v);
    } else if (const char* v = value("--path")) {
      f.path = v;
    } else if (const char* v = value("--body-file")) {
      std::ifstream in(v, std::ios::binary);
      if (!in) Usage(argv[0], std::string("cannot read --body-file ") + v);
      f.body.assign(std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>());
    } else if (const char* v = value("--header")) {
      const std::string_view h(v);
      const size_t colon = h.find(':');
      const std::string name(Trim(h.substr(0, colon)));
      if (colon == std::string_view::npos || name.empty() ||
          name.find_first_of(" \t\r\n") != std::string::npos ||
          h.find_first_of("\r\n") != std::string_view::npos)
        Usage(argv[0], "--header wants NAME:VALUE");
      if (EqualsIgnoreCase(name, "content-length") ||
          EqualsIgnoreCase(name, "transfer-encoding"))
        Usage(argv[0], "--header: " + name + " is computed, not settable");
      f.headers.emplace_back(name, std::string(Trim(h.substr(colon + 1))));
    } else if (const char* v = value("--expect")) {
      f.expect = v;
    } else if (std::strcmp(argv[i], "--sse") == 0) {
      set_framing(Framing::kSse);
    } else if (std::strcmp(argv[i], "--ndjson") == 0) {
      set_framing(Framing::kNdjson);
    } else if (std::strcmp(argv[i], "--eventstream") == 0) {
      set_framing(Framing::kEventStream);
    } else if (const char* v = value("--expect-events")) {
      f.expect_events = Number<int>(argv[0], "--expect-events", v);
    } else {
      Usage(argv[0], std::string("unknown flag ") + argv[i]);
    }
  }
  if (f.port <= 0 || f.port > 65535 || f.conns <= 0 || f.streams < 0 ||
      f.streams > f.conns || f.duration_s <= 0 || f.duration_s > 600 ||
      f.warmup_s < 0 || f.warmup_s > 600 || f.rate < 0 || f.expect_events < 0 ||
      f.path.empty() || f.path[0] != '/') {
    Usage(argv[0],
          "bad flags (port 1..65535, 0 <= streams <= conns, 0 < duration <= "
          "600, 0 <= warmup <= 600, rate >= 0, expect-events >= 0, path "
          "starts with /)");
  }
  if (f.expect_events > 0 && f.framing == Framing::kNone)
    Usage(argv[0], "--expect-events needs --sse, --ndjson or --eventstream");
  return f;
}

// Latency histogram, log-linear like HdrHistogram: values below 2^kSubBits ns
// are exact; above, each power of two is split into 2^kSubBits buckets, so a
// percentile is within 2^-kSubBits (0.1%) of the true value. Fixed size
// (~440 KiB) whatever the run length.
class Histogram {
 public:
  Histogram() : counts_((65 - kSubBits) << kSubBits) {}

  void Record(Clock::duration d) {
    const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
    ++counts_[Index(ns)];
    ++count_;
    max_ns_ = std::max(max_ns_, ns);
  }

  uint64_t count() const { return count_; }

  // The q-quantile (0 < q <= 1) in microseconds: the middle of the bucket
  // holding the ceil(q * count)-th smallest value; 0 if nothing recorded.
  double PercentileUs(double q) const {
    if (count_ == 0) return 0;
    const uint64_t rank = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank)
        return std::min(Middle(i), static_cast<double>(max_ns_)) / 1000.0;
    }
    return max_ns_ / 1000.0;
  }

  double MaxUs() const { return max_ns_ / 1000.0; }

 private:
  static constexpr int kSubBits = 10;

  static size_t Index(uint64_t v) {
    if (v < (uint64_t{1} << kSubBits)) return v;
    const int shift = 63 - __builtin_clzll(v) - kSubBits;
    return (static_cast<size_t>(shift + 1) << kSubBits) +
           static_cast<size_t>((v >> shift) - (uint64_t{1} << kSubBits));
  }

  static double Middle(size_t i) {
    if (i < (size_t{1} << kSubBits)) return static_cast<double>(i);
    const int shift = static_cast<int>(i >> kSubBits) - 1;
    const uint64_t top =
        (i & ((size_t{1} << kSubBits) - 1)) + (uint64_t{1} << kSubBits);
    return static_cast<double>(top << shift) +
           static_cast<double>(uint64_t{1} << shift) / 2;
  }

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t max_ns_ = 0;
};

// Counts the events of one streamed response body fed in arbitrary pieces,
// whatever its framing; one implementation per framing (NewEventCounter).
// Not thread-safe; each connection owns one and resets it per response.
class EventCounter {
 public:
  virtual ~EventCounter() = default;
  // Scans the next n bytes of the body; returns how many events end in them.
  virtual int Feed(const char* p, size_t n) = 0;
  // True once the body so far cannot be of this framing: the response is
  // wrong, and Feed counts nothing more until Reset.
  virtual bool malformed() const { return false; }
  // Forgets the body so far, for the next response.
  virtual void Reset() = 0;
};

// Server-Sent Events: a frame ends at a blank line, whatever the line ends
// ("\n", "\r\n" or "\r", as the SSE spec allows); a blank line with no
// bytes before it in its frame ends nothing.
class SseFrameCounter final : public EventCounter {
 public:
  int Feed(const char* p, size_t n) override {
    int events = 0;
    for (size_t k = 0; k < n; ++k) {
      const char ch = p[k];
      if (ch == '\n' && after_cr_) {  // The LF of a CRLF: already counted.
        after_cr_ = false;
        continue;
      }
      after_cr_ = ch == '\r';
      if (ch == '\n' || ch == '\r') {
        if (at_line_start_ && frame_has_bytes_) {
          frame_has_bytes_ = false;
          ++events;
        }
        at_line_start_ = true;
      } else {
        at_line_start_ = false;
        frame_has_bytes_ = true;
      }
    }
    return events;
  }

  void Reset() override { *this = SseFrameCounter(); }

 private:
  bool at_line_start_ = true;
  bool after_cr_ = false;
  bool frame_has_bytes_ = false;
};

// Newline-delimited JSON: an event is a line ended by "\n" with at least
// one byte before it other than the "\r" of a "\r\n".
class NdjsonLineCounter final : public EventCounter {
 public:
  int Feed(const char* p, size_t n) override {
    int events = 0;
    while (n > 0) {
      const void* found = std::memchr(p, '\n', n);
      const size_t len =
          found == nullptr
              ? n
              : static_cast<size_t>(static_cast<const char*>(found) - p);
      // A lone "\r" is the first half of a blank line's "\r\n"; one split
      // from its line's text by a read was counted with that text.
      if (len > 1 || (len == 1 && p[0] != '\r')) line_has_bytes_ = true;
      if (found == nullptr) break;
      if (line_has_bytes_) ++events;
      line_has_bytes_ = false;
      p += len + 1;
      n -= len + 1;
    }
    return events;
  }

  void Reset() override { line_has_bytes_ = false; }

 private:
  bool line_has_bytes_ = false;
};

// AWS event stream: an event is one whole frame, delimited by its prelude
// (total length, headers length; big-endian uint32s). The CRC32s are not
// checked.
class EventStreamFrameCounter final : public EventCounter {
 public:
  int Feed(const char* p, size_t n) override {
    int events = 0;
    while (n > 0 && !malformed_) {
      if (prelude_got_ < kLengths) {
        const size_t take = std::min(n, kLengths - prelude_got_);
        std::memcpy(prelude_ + prelude_got_, p, take);
        prelude_got_ += take;
        p += take;
        n -= take;
        if (prelude_got_ == kLengths) StartFrame();
        continue;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, rest_));
      p += take;
      n -= take;
      rest_ -= take;
      if (rest_ == 0) {
        ++events;
        prelude_got_ = 0;
      }
    }
    return events;
  }

  bool malformed() const override { return malformed_; }

  void Reset() override { *this = EventStreamFrameCounter(); }

 private:
  // The two lengths of the prelude; its CRC follows them.
  static constexpr size_t kLengths = 8;
  // Prelude (12 bytes) and message CRC (4): a frame with nothing else.
  static constexpr uint32_t kMinFrame = 16;
  static constexpr uint32_t kMaxFrame = uint32_t{16} << 20;  // The SDKs'.

  static uint32_t BigEndian(const unsigned char* b) {
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
           (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  // The lengths are in: checks them and skips the rest of the frame.
  void StartFrame() {
    const uint32_t total = BigEndian(prelude_);
    const uint32_t headers = BigEndian(prelude_ + 4);
    malformed_ =
        total < kMinFrame || total > kMaxFrame || headers > total - kMinFrame;
    if (!malformed_) rest_ = total - kLengths;
  }

  unsigned char prelude_[kLengths] = {};
  size_t prelude_got_ = 0;
  uint64_t rest_ = 0;  // Bytes of the current frame after its lengths.
  bool malformed_ = false;
};

// The counter of `framing`; nullptr for Framing::kNone.
std::unique_ptr<EventCounter> NewEventCounter(Framing framing) {
  switch (framing) {
    case Framing::kSse:
      return std::make_unique<SseFrameCounter>();
    case Framing::kNdjson:
      return std::make_unique<NdjsonLineCounter>();
    case Framing::kEventStream:
      return std::make_unique<EventStreamFrameCounter>();
    case Framing::kNone:
      break;
  }
  return nullptr;
}

// Incremental HTTP/1.1 response reader: Content-Length, chunked and
// close-delimited bodies.
enum class Phase {
  kHeaders,
  kBody,
  kChunkSize,
  kChunkData,
  kChunkCrlf,
  kTrailer,
  kUntilClose
};

struct Conn {
  int fd = -1;
  uint64_t gen = 0;     // Bumped by every (re)open: fd numbers get reused.
  bool stream = false;  // A GET /stream connection.
  bool connecting = false;
  bool waiting = false;  // A request is outstanding.
  bool idle = false;     // In Load::idle_, free for the next due request.
  const std::string* out = nullptr;  // Load::post_req_ or stream_req_.
  size_t out_off = 0;
  std::string in;
  size_t in_off = 0;
  Phase phase = Phase::kHeaders;
  uint64_t remaining = 0;
  bool close_after = false;
  int status = 0;
  // Per request: when it was due (--rate) or written, and what the body
  // showed so far.
  Clock::time_point start_at{};
  // GET /stream connections: SSE; POST ones: --sse/--ndjson/--eventstream's
  // counter, or nullptr without one.
  std::unique_ptr<EventCounter> frames;
  int resp_events = 0;
  Clock::time_point first_event_at{};
  Clock::time_point last_event_at{};
  bool expect_found = false;
  std::string expect_tail;  // Last len(--expect) - 1 body bytes.
  // Per connection, over the window.
  uint64_t responses = 0;  // POST responses or completed streams.
  uint64_t events = 0;     // GET /stream events.
};

class Load {
 public:
  explicit Load(const Flags& f) : f_(f) {}

  int Run() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(f_.port));
    if (inet_pton(AF_INET, f_.host.c_str(), &addr.sin_addr) != 1 ||
        (ntohl(addr.sin_addr.s_addr) >> 24) != 127) {
      std::fprintf(stderr, "--host must be an IPv4 loopback address\n");
      return 1;
    }
    addr_ = addr;
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) return Fail("epoll_create1");
    if (f_.rate > 0) {
      timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
      if (timer_fd_ < 0) return Fail("timerfd_create");
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = kTimerTag;
      if (epoll_ctl(ep_, EPOLL_CTL_ADD, timer_fd_, &ev) < 0)
        return Fail("epoll_ctl timerfd");
    }
    BuildRequests();

    start_ = Clock::now();
    measure_start_ = start_ + Seconds(f_.warmup_s);
    deadline_ = measure_start_ + Seconds(f_.duration_s);
    conns_.resize(f_.conns);
    for (int i = 0; i < f_.conns; ++i) {
      // Streams are spread evenly among the connections.
      conns_[i].stream = f_.streams > 0 &&
                         (static_cast<int64_t>(i) * f_.streams / f_.conns !=
                          static_cast<int64_t>(i + 1) * f_.streams / f_.conns);
      conns_[i].frames =
          NewEventCounter(conns_[i].stream ? Framing::kSse : f_.framing);
    }
    // Connections open one after the other, each once the previous one's
    // handshake is done: opened all at once, they overflow a small listen
    // backlog (cpp-httplib's is 5), and a dropped SYN is retried only after
    // a second, so those connections would miss a short run.
    OpenNext();

    std::vector<epoll_event> evs(1024);
    while (true) {
      const Clock::time_point now = Clock::now();
      if (now >= deadline_ || responses_ >= f_.max_requests) break;
      const int wait_ms =
          static_cast<int>(std::min<double>(50, Ms(deadline_ - now) + 1));
      const int n = epoll_wait(ep_, evs.data(), evs.size(), wait_ms);
      if (n < 0 && errno != EINTR) return Fail("epoll_wait");
      for (int k = 0; k < n; ++k) {
        if (evs[k].data.u32 == kTimerTag) {
          uint64_t expirations;
          const ssize_t r = read(timer_fd_, &expirations, sizeof expirations);
          (void)r;  // Only EAGAIN can fail here, and Dispatch() re-arms.
          timer_armed_for_ = Clock::time_point{};
          continue;
        }
        const int i = static_cast<int>(evs[k].data.u32);
        if (conns_[i].fd < 0) continue;
        Handle(i, evs[k].events);
      }
      Dispatch();
    }
    end_ = Clock::now();
    Report();
    for (Conn& c : conns_)
      if (c.fd >= 0) close(c.fd);
    if (timer_fd_ >= 0) close(timer_fd_);
    close(ep_);
    return 0;
  }

 private:
  static constexpr uint32_t kTimerTag = UINT32_MAX;

  int Fail(const char* what) {
    std::perror(what);
    return 1;
  }

  void BuildRequests() {
    bool has_host = false, has_type = false;
    std::string extra;
    for (const auto& [name, value] : f_.headers) {
      has_host |= EqualsIgnoreCase(name, "host");
      has_type |= EqualsIgnoreCase(name, "content-type");
      extra += name + ": " + value + "\r\n";
    }
    post_req_ = "POST " + f_.path + " HTTP/1.1\r\n";
    if (!has_host) post_req_ += "Host: " + f_.host + "\r\n";
    if (!has_type) post_req_ += "Content-Type: application/json\r\n";
    post_req_ += extra + "Content-Length: " + std::to_string(f_.body.size()) +
                 "\r\n\r\n" + f_.body;
    stream_req_ = "GET " + std::string(bench::kStreamPath) +
                  " HTTP/1.1\r\nHost: " + f_.host +
                  "\r\nAccept: text/event-stream\r\n\r\n";
  }

  bool InWindow(Clock::time_point t) const {
    return t >= measure_start_ && t < deadline_;
  }

  bool Stopping(Clock::time_point now) const {
    return now >= deadline_ || responses_ >= f_.max_requests;
  }

  // Opens the next connection not yet opened, if any; one whose open fails
  // at once is counted as an error and the one after it is tried.
  void OpenNext() {
    while (next_open_ < f_.conns) {
      const int i = next_open_++;
      Open(i);
      if (conns_[i].fd >= 0) return;
    }
  }

  void Open(int i) {
    Conn& c = conns_[i];
    ++c.gen;
    c.idle = false;
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      ++errors_;
      return;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c.out = nullptr;
    c.in.clear();
    c.in_off = 0;
    c.phase = Phase::kHeaders;
    c.waiting = false;
    const int rc =
        connect(c.fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_);
    if (rc < 0 && errno != EINPROGRESS) {
      ++errors_;
      close(c.fd);
      c.fd = -1;
      return;
    }
    c.connecting = true;
    epoll_event ev{};
    ev.events = EPOLLOUT | EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
  }

  void Reopen(int i) {
    Conn& c = conns_[i];
    epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.fd = -1;
    c.idle = false;
    ++reconnects_;
    if (Clock::now() < deadline_) Open(i);
  }

  void SetWantWrite(int i, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep_, EPOLL_CTL_MOD, conns_[i].fd, &ev);
  }

  // Connection i is ready for its next request: in closed loop (and for
  // stream connections) it sends at once; under --rate it joins the back of
  // the free queue, and Dispatch() hands it the next due request.
  void Release(int i) {
    Conn& c = conns_[i];
    if (f_.rate <= 0 || c.stream) return Send(i, Clock::now());
    c.idle = true;
    idle_.emplace_back(i, c.gen);
  }

  Clock::time_point DueTime(uint64_t k) const {
    return start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(k / f_.rate));
  }

  // --rate only: sends every due request for which a connection is free, then
  // arms the timer for the next one if a connection will be free for it.
  void Dispatch() {
    if (f_.rate <= 0) return;
    const Clock::time_point now = Clock::now();
    if (Stopping(now)) return;
    while (!idle_.empty() && DueTime(scheduled_) <= now) {
      const auto [i, gen] = idle_.front();
      idle_.pop_front();
      Conn& c = conns_[i];
      if (c.gen != gen || !c.idle) continue;  // Reopened since it was queued.
      c.idle = false;
      Send(i, DueTime(scheduled_++));
    }
    // Requests due now (k/R <= now - start) that no connection was free for.
    const double since_start =
        std::chrono::duration<double>(now - start_).count();
    const auto due = static_cast<uint64_t>(since_start * f_.rate) + 1;
    backlog_ = due > scheduled_ ? due - scheduled_ : 0;
    // With no free connection, the next completion wakes the loop instead.
    ArmTimer(idle_.empty() ? Clock::time_point{} : DueTime(scheduled_));
  }

  // Arms the timerfd to fire at `at` (steady_clock is CLOCK_MONOTONIC on
  // Linux), or disarms it for the zero time point.
  void ArmTimer(Clock::time_point at) {
    if (at == timer_armed_for_) return;
    timer_armed_for_ = at;
    itimerspec spec{};
    if (at != Clock::time_point{}) {
      const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             at.time_since_epoch())
                             .count();
      spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }

  // Sends the next request on connection i; `start` is when it was due
  // (--rate) or now. Does nothing once the run is stopping.
  void Send(int i, Clock::time_point start) {
    Conn& c = conns_[i];
    if (Stopping(Clock::now())) return;
    c.out = c.stream ? &stream_req_ : &post_req_;
    c.out_off = 0;
    c.waiting = true;
    c.phase = Phase::kHeaders;
    c.start_at = start;
    if (c.frames != nullptr) c.frames->Reset();
    c.resp_events = 0;
    c.expect_found = false;
    c.expect_tail.clear();
    Flush(i);
  }

  void Flush(int i) {
    Conn& c = conns_[i];
    while (c.out != nullptr && c.out_off < c.out->size()) {
      const ssize_t n = send(c.fd, c.out->data() + c.out_off,
                             c.out->size() - c.out_off, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_off += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        SetWantWrite(i, true);
        return;
      } else {
        ++errors_;
        return Reopen(i);
      }
    }
  }

  void Handle(int i, uint32_t events) {
    Conn& c = conns_[i];
    if (c.connecting) {
      if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        ++errors_;
        epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
        close(c.fd);
        c.fd = -1;
        OpenNext();
        return;  // Counted as an error; the connection stays unserved.
      }
      c.connecting = false;
      SetWantWrite(i, false);
      OpenNext();
      return Release(i);
    }
    const uint64_t gen = c.gen;
    if (events & EPOLLOUT) {
      SetWantWrite(i, false);
      Flush(i);
      if (c.gen != gen) return;  // Reopened.
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) Receive(i);
  }

  void Receive(int i) {
    Conn& c = conns_[i];
    char buf[65536];
    const uint64_t gen = c.gen;
    while (true) {
      const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        if (!Parse(i)) {
          ++errors_;
          return Reopen(i);
        }
        if (c.gen != gen) return;  // Reopened while parsing.
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n == 0 && c.waiting && c.phase == Phase::kUntilClose) {
        c.close_after = true;  // The close ends the body: Complete reopens.
        return Complete(i);
      }
      // EOF or error: a close between responses is a reconnect; in the middle
      // of one it is also an error.
      if (n < 0 || c.waiting) ++errors_;
      return Reopen(i);
    }
  }

  // Reads the status line and headers of a response (`head` excludes the
  // final blank line) and picks how its body is delimited. Returns false if
  // they are malformed.
  bool ParseHead(int i, std::string_view head) {
    Conn& c = conns_[i];
    if (head.size() < 12 || (head.compare(0, 9, "HTTP/1.1 ") != 0 &&
                             head.compare(0, 9, "HTTP/1.0 ") != 0))
      return false;
    if (!std::isdigit(static_cast<unsigned char>(head[9])) ||
        !std::isdigit(static_cast<unsigned char>(head[10])) ||
        !std::isdigit(static_cast<unsigned char>(head[11])))
      return false;
    c.status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
    bool chunked = false, has_length = false;
    uint64_t length = 0;
    c.close_after = head[7] == '0';  // HTTP/1.0 closes unless it says not.
    size_t pos = head.find("\r\n");
    while (pos != std::string_view::npos) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string_view line = head.substr(
          pos + 2, next == std::string_view::npos ? std::string_view::npos
                                                  : next - pos - 2);
      pos = next;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = Trim(line.substr(0, colon));
      const std::string_view value = Trim(line.substr(colon + 1));
      if (EqualsIgnoreCase(name, "content-length")) {
        const char* end = value.data() + value.size();
        const auto [stop, ec] = std::from_chars(value.data(), end, length);
        if (ec != std::errc() || stop != end) return false;
        has_length = true;
      } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
        chunked = ContainsIgnoreCase(value, "chunked");
      } else if (EqualsIgnoreCase(name, "connection")) {
        if (ContainsIgnoreCase(value, "close")) c.close_after = true;
        if (ContainsIgnoreCase(value, "keep-alive")) c.close_after = false;
      }
    }
    if (c.status == 204 || c.status == 304) {
      c.phase = Phase::kBody;
      c.remaining = 0;
    } else if (chunked) {
      c.phase = Phase::kChunkSize;
    } else if (has_length) {
      c.phase = Phase::kBody;
      c.remaining = length;
    } else {
      c.phase = Phase::kUntilClose;
      c.close_after = true;
    }
    return true;
  }

  // Consumes what it can of c.in. Returns false on a malformed response.
  bool Parse(int i) {
    Conn& c = conns_[i];
    const uint64_t gen = c.gen;
    while (c.in_off < c.in.size()) {
      if (!c.waiting) return false;  // Bytes nobody asked for.
      const char* p = c.in.data() + c.in_off;
      const size_t avail = c.in.size() - c.in_off;
      switch (c.phase) {
        case Phase::kHeaders: {
          const size_t end = c.in.find("\r\n\r\n", c.in_off);
          if (end == std::string::npos) {
            if (avail > kMaxHead) return false;
            return Compact(c);
          }
          const std::string_view head(p, end - c.in_off);
          c.in_off = end + 4;
          if (!ParseHead(i, head)) return false;
          if (c.status >= 100 && c.status < 200) {
            if (c.status == 101) return false;  // We never ask to upgrade.
            c.phase = Phase::kHeaders;  // Interim response: the real follows.
            break;
          }
          if (c.phase == Phase::kBody && c.remaining == 0) Complete(i);
          break;
        }
        case Phase::kBody: {
          const size_t take = std::min<uint64_t>(avail, c.remaining);
          OnBody(i, p, take);
          c.in_off += take;
          c.remaining -= take;
          if (c.remaining == 0) Complete(i);
          break;
        }
        case Phase::kUntilClose: {
          OnBody(i, p, avail);
          c.in_off += avail;
          break;
        }
        case Phase::kChunkSize: {
          const size_t end = c.in.find("\r\n", c.in_off);
          if (end == std::string::npos) return Compact(c);
          char* stop = nullptr;
          c.remaining = std::strtoull(p, &stop, 16);
          if (stop == p) return false;
          c.in_off = end + 2;
          c.phase = c.remaining == 0 ? Phase::kTrailer : Phase::kChunkData;
          break;
        }
        case Phase::kChunkData: {
          const size_t take = std::min<uint64_t>(avail, c.remaining);
          OnBody(i, p, take);
          c.in_off += take;
          c.remaining -= take;
          if (c.remaining == 0) c.phase = Phase::kChunkCrlf;
          break;
        }
        case Phase::kChunkCrlf: {
          if (avail < 2) return Compact(c);
          if (p[0] != '\r' || p[1] != '\n') return false;
          c.in_off += 2;
          c.phase = Phase::kChunkSize;
          break;
        }
        case Phase::kTrailer: {
          // Trailer fields are skipped; the last one ends with an empty line.
          const size_t end = c.in.find("\r\n", c.in_off);
          if (end == std::string::npos) return Compact(c);
          const bool empty_line = end == c.in_off;
          c.in_off = end + 2;
          if (empty_line) Complete(i);
          break;
        }
      }
      if (c.gen != gen) return true;  // Complete() reopened the connection.
    }
    return Compact(c);
  }

  static bool Compact(Conn& c) {
    c.in.erase(0, c.in_off);
    c.in_off = 0;
    return true;
  }

  // n body bytes of the current response of connection i (de-chunked).
  void OnBody(int i, const char* p, size_t n) {
    Conn& c = conns_[i];
    if (c.stream) {
      for (int k = c.frames->Feed(p, n); k > 0; --k) OnStreamEvent(c);
      return;
    }
    if (c.frames != nullptr) {
      const int ended = c.frames->Feed(p, n);
      if (ended > 0 && c.resp_events == 0) c.first_event_at = Clock::now();
      c.resp_events += ended;
    }
    if (!f_.expect.empty() && !c.expect_found) FindExpected(c, p, n);
  }

  // Looks for --expect in the body so far without keeping it: matches that
  // straddle reads are found in the kept tail plus the head of this piece.
  void FindExpected(Conn& c, const char* p, size_t n) {
    const size_t keep = f_.expect.size() - 1;
    const std::string_view piece(p, n);
    c.expect_tail.append(p, std::min(n, keep));
    if (c.expect_tail.find(f_.expect) != std::string::npos ||
        piece.find(f_.expect) != std::string_view::npos) {
      c.expect_found = true;
      c.expect_tail.clear();
      return;
    }
    if (n >= keep) {
      c.expect_tail.assign(p + n - keep, keep);
    } else if (c.expect_tail.size() > keep) {
      c.expect_tail.erase(0, c.expect_tail.size() - keep);
    }
  }

  // A GET /stream event (the http_choice fairness scenario).
  void OnStreamEvent(Conn& c) {
    const Clock::time_point now = Clock::now();
    if (InWindow(now)) {
      ++c.events;
      ++events_;
      if (c.resp_events > 0) {
        max_gap_ms_ = std::max(max_gap_ms_, Ms(now - c.last_event_at));
      } else {
        first_event_max_ms_ =
            std::max(first_event_max_ms_, Ms(now - c.start_at));
      }
    }
    ++c.resp_events;
    c.last_event_at = now;
  }

  void Complete(int i) {
    Conn& c = conns_[i];
    const Clock::time_point now = Clock::now();
    c.waiting = false;
    c.phase = Phase::kHeaders;
    if (InWindow(now)) {
      ++c.responses;
      if (c.status != 200) ++non_200_;
      if (c.stream) {
        ++streams_done_;
      } else {
        Account(c, now);
      }
    }
    if (c.close_after) return Reopen(i);
    Release(i);
  }

  // Counts a POST response completed at `now`, in the window.
  void Account(const Conn& c, Clock::time_point now) {
    ++responses_;
    const bool ok_status = c.status >= 200 && c.status < 300;
    const bool counting = c.frames != nullptr;
    if (counting && ok_status) {
      events_per_resp_min_ = std::min(events_per_resp_min_, c.resp_events);
      events_per_resp_max_ = std::max(events_per_resp_max_, c.resp_events);
    }
    if (!ok_status) {
      ++non2xx_;
    } else if ((!f_.expect.empty() && !c.expect_found) ||
               (counting && !EventsAsExpected(c))) {
      ++wrong_;
    } else {
      ++ok_;
      latency_.Record(now - c.start_at);
      if (counting) {
        sse_events_ += static_cast<uint64_t>(c.resp_events);
        ttfc_.Record(c.first_event_at - c.start_at);
      }
    }
  }

  // A counted response's events: well framed, at least one, and
  // --expect-events of them when given.
  bool EventsAsExpected(const Conn& c) const {
    return !c.frames->malformed() && c.resp_events > 0 &&
           (f_.expect_events == 0 || c.resp_events == f_.expect_events);
  }

  void Report() {
    const Clock::time_point stop = std::min(end_, deadline_);
    const double secs = std::max(
        0.0, std::chrono::duration<double>(stop - measure_start_).count());
    std::vector<uint64_t> per;
    uint64_t zero = 0, waiting = 0, stream_zero = 0, stream_conns = 0;
    double oldest_wait = 0;
    for (const Conn& c : conns_) {
      if (c.stream) {
        ++stream_conns;
        if (c.events == 0) ++stream_zero;
        continue;
      }
      per.push_back(c.responses);
      if (c.responses == 0) ++zero;
      if (c.waiting && c.fd >= 0) {
        ++waiting;
        oldest_wait = std::max(oldest_wait, Ms(end_ - c.start_at));
      }
    }
    std::sort(per.begin(), per.end());
    const uint64_t cmin = per.empty() ? 0 : per.front();
    const uint64_t cmed = per.empty() ? 0 : per[per.size() / 2];
    const uint64_t cmax = per.empty() ? 0 : per.back();
    const double rps = secs > 0 ? ok_ / secs : 0;
    const double events_per_s = secs > 0 ? sse_events_ / secs : 0;
    const int ev_min = events_per_resp_max_ < 0 ? 0 : events_per_resp_min_;
    const int ev_max = std::max(0, events_per_resp_max_);
    const double p50 = latency_.PercentileUs(0.50);
    const double p99 = latency_.PercentileUs(0.99);
    const double p999 = latency_.PercentileUs(0.999);
    const double max = latency_.MaxUs();
    auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };

    char mode[64] = "closed loop";
    if (f_.rate > 0)
      std::snprintf(mode, sizeof mode, "open loop at %g req/s", f_.rate);
    std::printf(
        "run: %d conns (%llu request, %llu stream) to %s:%d; warm-up %g s, "
        "measured %.2f s; %s\n",
        f_.conns, ull(per.size()), ull(stream_conns), f_.host.c_str(), f_.port,
        f_.warmup_s, secs, mode);
    std::printf(
        "POST %s: %llu ok (%.0f req/s), %llu wrong, %llu non-2xx of %llu "
        "responses; latency us p50 %.0f p99 %.0f p99.9 %.0f max %.0f\n",
        f_.path.c_str(), ull(ok_), rps, ull(wrong_), ull(non2xx_),
        ull(responses_), p50, p99, p999, max);
    const bool counting = f_.framing != Framing::kNone;
    if (counting) {
      std::printf(
          "%s: %llu events in ok responses (%.0f events/s); events per "
          "2xx response %d..%d; first event us p50 %.0f p99 %.0f max %.0f\n",
          FramingName(f_.framing), ull(sse_events_), events_per_s, ev_min,
          ev_max, ttfc_.PercentileUs(0.50), ttfc_.PercentileUs(0.99),
          ttfc_.MaxUs());
    }
    std::printf(
        "per request connection: min %llu median %llu max %llu; "
        "ZERO responses: %llu of %zu; still waiting at end: %llu "
        "(oldest %.0f ms)\n",
        ull(cmin), ull(cmed), ull(cmax), ull(zero), per.size(), ull(waiting),
        oldest_wait);
    if (stream_conns > 0) {
      std::printf(
          "streams: %llu completed, %llu events; stream conns with "
          "ZERO events: %llu of %llu; first event max %.1f ms; max "
          "gap between events %.1f ms\n",
          ull(streams_done_), ull(events_), ull(stream_zero), ull(stream_conns),
          first_event_max_ms_, max_gap_ms_);
    }
    std::printf("reconnects %llu, errors %llu, non-200 %llu, backlog %llu\n",
                ull(reconnects_), ull(errors_), ull(non_200_), ull(backlog_));
    std::printf(
        "RESULT conns=%d streams=%llu secs=%.2f requests=%llu rps=%.0f "
        "p50_ms=%.2f p99_ms=%.2f max_ms=%.2f conn_min=%llu conn_med=%llu "
        "conn_max=%llu conn_zero=%llu waiting=%llu oldest_wait_ms=%.0f "
        "streams_done=%llu events=%llu stream_zero=%llu "
        "first_event_max_ms=%.1f max_gap_ms=%.1f reconnects=%llu "
        "errors=%llu non200=%llu warmup=%g rate=%g p50_us=%.0f p99_us=%.0f "
        "p999_us=%.0f max_us=%.0f responses=%llu wrong=%llu non2xx=%llu "
        "backlog=%llu sse=%d sse_events=%llu events_per_s=%.0f "
        "ttfc_p50_us=%.0f ttfc_p99_us=%.0f ttfc_max_us=%.0f "
        "events_per_resp_min=%d events_per_resp_max=%d framing=%s\n",
        f_.conns, ull(stream_conns), secs, ull(ok_), rps, p50 / 1000,
        p99 / 1000, max / 1000, ull(cmin), ull(cmed), ull(cmax), ull(zero),
        ull(waiting), oldest_wait, ull(streams_done_), ull(events_),
        ull(stream_zero), first_event_max_ms_, max_gap_ms_, ull(reconnects_),
        ull(errors_), ull(non_200_), f_.warmup_s, f_.rate, p50, p99, p999, max,
        ull(responses_), ull(wrong_), ull(non2xx_), ull(backlog_),
        counting ? 1 : 0, ull(sse_events_), events_per_s,
        ttfc_.PercentileUs(0.50), ttfc_.PercentileUs(0.99), ttfc_.MaxUs(),
        ev_min, ev_max, FramingName(f_.framing));
  }

  static constexpr size_t kMaxHead = 64 * 1024;

  const Flags f_;
  sockaddr_in addr_{};
  int ep_ = -1;
  int next_open_ = 0;  // conns_[next_open_..] are not opened yet
  int timer_fd_ = -1;
  Clock::time_point timer_armed_for_{};
  std::string post_req_, stream_req_;
  std::vector<Conn> conns_;
  std::deque<std::pair<int, uint64_t>> idle_;  // (conn, gen), oldest first.
  uint64_t scheduled_ = 0;  // --rate: requests handed to a connection.
  uint64_t backlog_ = 0;    // --rate: due but unsent at the last Dispatch().
  Histogram latency_, ttfc_;
  Clock::time_point start_, measure_start_, deadline_, end_;
  uint64_t responses_ = 0, ok_ = 0, wrong_ = 0, non2xx_ = 0;
  uint64_t sse_events_ = 0;
  int events_per_resp_min_ = INT32_MAX, events_per_resp_max_ = -1;
  uint64_t streams_done_ = 0, events_ = 0;
  uint64_t reconnects_ = 0, errors_ = 0, non_200_ = 0;
  double first_event_max_ms_ = 0, max_gap_ms_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  Load load(flags);
  return load.Run();
}
