// What a running understudy counts for Prometheus (docs/metrics.md), and
// their text exposition, served at GET /metrics. A thin layer over
// prometheus-cpp's core (Debian's prometheus-cpp-dev): its registry, counters,
// gauges, histograms and text serializer; the families and their labels are
// understudy's own and named here once.
//
//   understudy_requests_total{api,mode,source}   every request decided:
//       api      the API it came over (a codec's name: "openai",
//                "anthropic", …; "mcp", "a2a", "grpc")
//       mode     the run's mode (record, replay, passthrough, new, once)
//       source   what answered: recording, closest_recording, rule,
//                playbook, default, mock, upstream; "miss" when nothing
//                did, "error" when the request was refused
//   understudy_upstream_errors_total{api}         forwarded calls that failed
//   understudy_request_duration_seconds{api}      request received to answer
//                                                 sent (HTTP, gRPC)
//   understudy_store_write_duration_seconds       one batch of writes (trace
//                                                 events, recordings, runs)
//   understudy_trace_queue_depth                  writes queued, not committed
//   understudy_runs_active                        runs started, not ended
//
// Thread-safe: every method may be called from any thread. Counting on the
// request path takes a reader lock and an atomic add once a label set has
// been seen; the first use of a label set takes the writer lock.
#ifndef UNDERSTUDY_METRICS_METRICS_H_
#define UNDERSTUDY_METRICS_METRICS_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace understudy {
namespace metrics {

// What a gauge reads at scrape time.
struct GaugeReadings {
  int64_t runs_active = 0;
  int64_t trace_queue_depth = 0;
};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One request decided over `api`, in a run of `mode`, answered by
  // `source` (see above).
  void CountRequest(absl::string_view api, absl::string_view mode, absl::string_view source);
  // One forwarded call over `api` that failed (transport, HTTP error, bad
  // answer); a client that went away is none.
  void CountUpstreamError(absl::string_view api);
  // One request over `api` answered in `elapsed`.
  void ObserveRequest(absl::string_view api, absl::Duration elapsed);
  // One batch of store writes committed (or failed) in `elapsed`.
  void ObserveStoreWrite(absl::Duration elapsed);

  // Sets what the gauges read at each scrape (replacing any earlier one).
  // `read` must be thread-safe and cheap; it runs inside Exposition.
  void SetGaugeReader(std::function<GaugeReadings()> read) ABSL_LOCKS_EXCLUDED(mu_);

  // Every family in the text exposition format (version 0.0.4).
  std::string Exposition() ABSL_LOCKS_EXCLUDED(mu_);

  // The content type of Exposition's text.
  static constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

 private:
  // The counter or histogram of a label set, made on first use.
  prometheus::Counter& CounterFor(prometheus::Family<prometheus::Counter>& family,
                                  absl::flat_hash_map<std::string, prometheus::Counter*>& cache,
                                  std::initializer_list<absl::string_view> values)
      ABSL_LOCKS_EXCLUDED(mu_);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& upstream_errors_;
  prometheus::Family<prometheus::Histogram>& request_duration_;
  prometheus::Histogram& store_write_;
  prometheus::Gauge& trace_queue_depth_;
  prometheus::Gauge& runs_active_;

  absl::Mutex mu_;
  // By the label values joined with '\x1f'.
  absl::flat_hash_map<std::string, prometheus::Counter*> request_counters_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, prometheus::Counter*> error_counters_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, prometheus::Histogram*> durations_ ABSL_GUARDED_BY(mu_);
  std::function<GaugeReadings()> read_gauges_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metrics
}  // namespace understudy

#endif  // UNDERSTUDY_METRICS_METRICS_H_
