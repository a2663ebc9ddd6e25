// conn_load: a keep-alive connection-fairness load client for understudy's
// HTTP baseline servers (bench/http_choice/). Unlike wrk, it reports how many
// responses EACH connection got, so a server that serves some connections and
// starves the rest cannot hide behind a good req/s figure.
//
// Contract:
//   * Opens --conns=C (default 256) HTTP/1.1 keep-alive connections to
//     --host (default 127.0.0.1; only 127.0.0.0/8 is accepted: this tool must
//     never load another machine) : --port (required).
//   * C - S of them send POST /v1/chat/completions with
//     bench::kChatRequestBody back-to-back (next request as soon as the
//     previous response is complete); the other S = --streams (default 0)
//     send GET /stream back-to-back, each held open ~1 s by the server.
//   * Runs for --duration=D seconds (default 10) from the first connect, or
//     until --max-requests (default 50,000,000) responses, whichever is first;
//     then closes every connection and exits. Responses not complete by then
//     are not counted. It never waits longer than D seconds plus the
//     time of one epoll_wait (at most 50 ms).
//   * Prints a human-readable report and one machine-readable line starting
//     "RESULT " with key=value fields. Exits 0 if the run completed (even if
//     connections starved: that is a result, not an error), 1 on bad flags or
//     setup failure.
//
// Figures:
//   rps            completed POST responses / D.
//   p50/p99/max    POST latency (request written -> response complete), ms.
//   conn_min/med/max, conn_zero
//                  per-connection count of completed POST responses over the
//                  C - S request connections; conn_zero = connections that
//                  got no response at all during the run.
//   waiting, oldest_wait_ms
//                  request connections with a request outstanding at the end,
//                  and the age of the oldest such request.
//   streams, events, stream_zero, first_event_max_ms, max_gap_ms
//                  completed /stream responses, SSE events received ("\n\n"
//                  frame ends), stream connections that got no event at all,
//                  worst time to first event, worst gap between two events
//                  of one stream (50 ms when nothing stalls).
//   reconnects, errors
//                  connections re-opened because the server closed them, and
//                  connect failures / resets / malformed responses.
//
// Single-threaded (one epoll loop), so the client uses at most one core.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_bodies.h"

namespace {

namespace bench = ::understudy::bench;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  int conns = 256;
  int streams = 0;
  double duration_s = 10;
  uint64_t max_requests = 50'000'000;
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
    if (const char* v = value("--host")) {
      f.host = v;
    } else if (const char* v = value("--port")) {
      f.port = std::atoi(v);
    } else if (const char* v = value("--conns")) {
      f.conns = std::atoi(v);
    } else if (const char* v = value("--streams")) {
      f.streams = std::atoi(v);
    } else if (const char* v = value("--duration")) {
      f.duration_s = std::atof(v);
    } else if (const char* v = value("--max-requests")) {
      f.max_requests = std::strtoull(v, nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: %s --port=P [--host=127.0.0.1] [--conns=256] "
                   "[--streams=0] [--duration=10] [--max-requests=N]\n",
                   argv[0]);
      std::exit(1);
    }
  }
  if (f.port <= 0 || f.port > 65535 || f.conns <= 0 || f.streams < 0 ||
      f.streams > f.conns || f.duration_s <= 0 || f.duration_s > 600) {
    std::fprintf(stderr, "bad flags (port 1..65535, 0 <= streams <= conns, "
                         "0 < duration <= 600)\n");
    std::exit(1);
  }
  return f;
}

// Incremental HTTP/1.1 response reader: Content-Length and chunked bodies.
enum class Phase { kHeaders, kBody, kChunkSize, kChunkData, kChunkCrlf,
                   kTrailer };

struct Conn {
  int fd = -1;
  uint64_t gen = 0;  // Bumped by every (re)open: fd numbers get reused.
  bool stream = false;
  bool connecting = false;
  bool waiting = false;  // A request is outstanding.
  std::string out;
  size_t out_off = 0;
  std::string in;
  size_t in_off = 0;
  Phase phase = Phase::kHeaders;
  uint64_t remaining = 0;
  bool close_after = false;
  char prev = 0;  // Last body byte, to find "\n\n" across reads.
  Clock::time_point sent_at{};
  Clock::time_point last_event_at{};
  bool have_event_in_stream = false;
  uint64_t responses = 0;  // POST responses or completed streams.
  uint64_t events = 0;
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

    post_req_ = "POST " + std::string(bench::kChatCompletionPath) +
                " HTTP/1.1\r\nHost: " + f_.host +
                "\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(bench::kChatRequestBody.size()) + "\r\n\r\n" +
                std::string(bench::kChatRequestBody);
    stream_req_ = "GET " + std::string(bench::kStreamPath) +
                  " HTTP/1.1\r\nHost: " + f_.host +
                  "\r\nAccept: text/event-stream\r\n\r\n";
    latencies_.reserve(1 << 20);

    start_ = Clock::now();
    deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(f_.duration_s));
    conns_.resize(f_.conns);
    for (int i = 0; i < f_.conns; ++i) {
      // Streams are spread evenly among the connections.
      conns_[i].stream =
          f_.streams > 0 &&
          (static_cast<int64_t>(i) * f_.streams / f_.conns !=
           static_cast<int64_t>(i + 1) * f_.streams / f_.conns);
      Open(i);
    }

    std::vector<epoll_event> evs(1024);
    while (true) {
      const Clock::time_point now = Clock::now();
      if (now >= deadline_ || total_ >= f_.max_requests) break;
      const int wait_ms = static_cast<int>(
          std::min<double>(50, Ms(deadline_ - now) + 1));
      const int n = epoll_wait(ep_, evs.data(), evs.size(), wait_ms);
      if (n < 0 && errno != EINTR) return Fail("epoll_wait");
      for (int k = 0; k < n; ++k) {
        const int i = static_cast<int>(evs[k].data.u32);
        if (conns_[i].fd < 0) continue;
        Handle(i, evs[k].events);
      }
    }
    end_ = Clock::now();
    Report();
    for (Conn& c : conns_)
      if (c.fd >= 0) close(c.fd);
    close(ep_);
    return 0;
  }

 private:
  int Fail(const char* what) {
    std::perror(what);
    return 1;
  }

  void Open(int i) {
    Conn& c = conns_[i];
    ++c.gen;
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      ++errors_;
      return;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
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
    ++reconnects_;
    if (Clock::now() < deadline_) Open(i);
  }

  void SetWantWrite(int i, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0u);
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep_, EPOLL_CTL_MOD, conns_[i].fd, &ev);
  }

  void Send(int i) {
    Conn& c = conns_[i];
    if (Clock::now() >= deadline_ || total_ >= f_.max_requests) return;
    c.out = c.stream ? stream_req_ : post_req_;
    c.out_off = 0;
    c.waiting = true;
    c.phase = Phase::kHeaders;
    c.have_event_in_stream = false;
    c.prev = 0;
    c.sent_at = Clock::now();
    Flush(i);
  }

  void Flush(int i) {
    Conn& c = conns_[i];
    while (c.out_off < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.out_off,
                             c.out.size() - c.out_off, MSG_NOSIGNAL);
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
        return;  // Counted as an error; the connection stays unserved.
      }
      c.connecting = false;
      SetWantWrite(i, false);
      return Send(i);
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
    char buf[16384];
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
      // EOF or error: a close between responses is a reconnect; in the middle
      // of one it is also an error.
      if (n < 0 || c.waiting) ++errors_;
      return Reopen(i);
    }
  }

  // Consumes what it can of c.in. Returns false on a malformed response.
  bool Parse(int i) {
    Conn& c = conns_[i];
    const uint64_t gen = c.gen;
    while (c.in_off < c.in.size()) {
      const char* p = c.in.data() + c.in_off;
      const size_t avail = c.in.size() - c.in_off;
      switch (c.phase) {
        case Phase::kHeaders: {
          const size_t end = c.in.find("\r\n\r\n", c.in_off);
          if (end == std::string::npos) return Compact(c);
          std::string head = c.in.substr(c.in_off, end - c.in_off);
          c.in_off = end + 4;
          if (head.compare(0, 9, "HTTP/1.1 ") != 0 &&
              head.compare(0, 9, "HTTP/1.0 ") != 0)
            return false;
          if (head.compare(9, 3, "200") != 0) ++non_200_;
          std::transform(head.begin(), head.end(), head.begin(), ::tolower);
          c.close_after = head.find("\r\nconnection: close") !=
                              std::string::npos ||
                          head.compare(0, 8, "http/1.0") == 0;
          if (head.find("\r\ntransfer-encoding: chunked") !=
              std::string::npos) {
            c.phase = Phase::kChunkSize;
          } else {
            const size_t cl = head.find("\r\ncontent-length:");
            c.remaining =
                cl == std::string::npos
                    ? 0
                    : std::strtoull(head.c_str() + cl + 17, nullptr, 10);
            c.phase = Phase::kBody;
            if (c.remaining == 0) Complete(i);
          }
          break;
        }
        case Phase::kBody: {
          const size_t take = std::min<uint64_t>(avail, c.remaining);
          c.in_off += take;
          c.remaining -= take;
          if (c.remaining == 0) Complete(i);
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
          if (c.stream) CountEvents(c, p, take);
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
          // No trailers expected: the last chunk ends with an empty line.
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

  void CountEvents(Conn& c, const char* p, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (p[k] == '\n' && c.prev == '\n') {
        const Clock::time_point now = Clock::now();
        if (now < deadline_) {
          ++c.events;
          ++events_;
          if (c.have_event_in_stream) {
            max_gap_ms_ = std::max(max_gap_ms_, Ms(now - c.last_event_at));
          } else {
            first_event_max_ms_ =
                std::max(first_event_max_ms_, Ms(now - c.sent_at));
          }
        }
        c.have_event_in_stream = true;
        c.last_event_at = now;
        c.prev = 0;
        continue;
      }
      c.prev = p[k];
    }
  }

  void Complete(int i) {
    Conn& c = conns_[i];
    const Clock::time_point now = Clock::now();
    c.waiting = false;
    c.phase = Phase::kHeaders;
    if (now < deadline_) {
      ++c.responses;
      if (c.stream) {
        ++streams_done_;
      } else {
        ++total_;
        latencies_.push_back(Ms(now - c.sent_at));
      }
    }
    if (c.close_after) {
      Compact(c);
      return Reopen(i);
    }
    Send(i);
  }

  void Report() {
    const double secs = std::chrono::duration<double>(end_ - start_).count();
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
        oldest_wait = std::max(oldest_wait, Ms(end_ - c.sent_at));
      }
    }
    std::sort(per.begin(), per.end());
    std::sort(latencies_.begin(), latencies_.end());
    auto pct = [&](double q) {
      if (latencies_.empty()) return 0.0;
      return latencies_[std::min(latencies_.size() - 1,
                                 static_cast<size_t>(q * latencies_.size()))];
    };
    const uint64_t cmin = per.empty() ? 0 : per.front();
    const uint64_t cmed = per.empty() ? 0 : per[per.size() / 2];
    const uint64_t cmax = per.empty() ? 0 : per.back();
    const double rps = total_ / secs;

    std::printf("run: %d conns (%llu request, %llu stream) to %s:%d for %.2f s\n",
                f_.conns, static_cast<unsigned long long>(per.size()),
                static_cast<unsigned long long>(stream_conns), f_.host.c_str(),
                f_.port, secs);
    std::printf("requests: %llu  %.0f req/s  latency ms p50 %.2f p99 %.2f "
                "max %.2f\n",
                static_cast<unsigned long long>(total_), rps, pct(0.50),
                pct(0.99), latencies_.empty() ? 0.0 : latencies_.back());
    std::printf("per request connection: min %llu median %llu max %llu; "
                "ZERO responses: %llu of %zu; still waiting at end: %llu "
                "(oldest %.0f ms)\n",
                static_cast<unsigned long long>(cmin),
                static_cast<unsigned long long>(cmed),
                static_cast<unsigned long long>(cmax),
                static_cast<unsigned long long>(zero), per.size(),
                static_cast<unsigned long long>(waiting), oldest_wait);
    if (stream_conns > 0) {
      std::printf("streams: %llu completed, %llu events; stream conns with "
                  "ZERO events: %llu of %llu; first event max %.1f ms; max "
                  "gap between events %.1f ms\n",
                  static_cast<unsigned long long>(streams_done_),
                  static_cast<unsigned long long>(events_),
                  static_cast<unsigned long long>(stream_zero),
                  static_cast<unsigned long long>(stream_conns),
                  first_event_max_ms_, max_gap_ms_);
    }
    std::printf("reconnects %llu, errors %llu, non-200 %llu\n",
                static_cast<unsigned long long>(reconnects_),
                static_cast<unsigned long long>(errors_),
                static_cast<unsigned long long>(non_200_));
    std::printf(
        "RESULT conns=%d streams=%llu secs=%.2f requests=%llu rps=%.0f "
        "p50_ms=%.2f p99_ms=%.2f max_ms=%.2f conn_min=%llu conn_med=%llu "
        "conn_max=%llu conn_zero=%llu waiting=%llu oldest_wait_ms=%.0f "
        "streams_done=%llu events=%llu stream_zero=%llu "
        "first_event_max_ms=%.1f max_gap_ms=%.1f reconnects=%llu "
        "errors=%llu non200=%llu\n",
        f_.conns, static_cast<unsigned long long>(stream_conns), secs,
        static_cast<unsigned long long>(total_), rps, pct(0.50), pct(0.99),
        latencies_.empty() ? 0.0 : latencies_.back(),
        static_cast<unsigned long long>(cmin),
        static_cast<unsigned long long>(cmed),
        static_cast<unsigned long long>(cmax),
        static_cast<unsigned long long>(zero),
        static_cast<unsigned long long>(waiting), oldest_wait,
        static_cast<unsigned long long>(streams_done_),
        static_cast<unsigned long long>(events_),
        static_cast<unsigned long long>(stream_zero), first_event_max_ms_,
        max_gap_ms_, static_cast<unsigned long long>(reconnects_),
        static_cast<unsigned long long>(errors_),
        static_cast<unsigned long long>(non_200_));
  }

  const Flags f_;
  sockaddr_in addr_{};
  int ep_ = -1;
  std::string post_req_, stream_req_;
  std::vector<Conn> conns_;
  std::vector<double> latencies_;
  Clock::time_point start_, deadline_, end_;
  uint64_t total_ = 0, streams_done_ = 0, events_ = 0;
  uint64_t reconnects_ = 0, errors_ = 0, non_200_ = 0;
  double first_event_max_ms_ = 0, max_gap_ms_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  Load load(flags);
  return load.Run();
}
