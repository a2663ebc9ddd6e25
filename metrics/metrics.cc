#include "metrics/metrics.h"

#include <sstream>
#include <utility>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace understudy {
namespace metrics {
namespace {

// Seconds: 50 µs (a replayed answer) to 30 s (a slow upstream).
const prometheus::Histogram::BucketBoundaries& RequestBuckets() {
  static const auto* const kBuckets = new prometheus::Histogram::BucketBoundaries{
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
  return *kBuckets;
}

// Seconds: a batch commit, 100 µs to 5 s.
const prometheus::Histogram::BucketBoundaries& StoreBuckets() {
  static const auto* const kBuckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};
  return *kBuckets;
}

// The key of a label set: its values joined with '\x1f', in `buffer` (no
// allocation for label values of ordinary length).
absl::string_view KeyOf(std::initializer_list<absl::string_view> values, std::string* buffer) {
  buffer->clear();
  for (absl::string_view v : values) {
    buffer->append(v.data(), v.size());
    buffer->push_back('\x1f');
  }
  return *buffer;
}

thread_local std::string key_buffer;

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("understudy_requests_total")
                    .Help("Requests decided, by the API they came over, the run's mode and what "
                          "answered them (miss: nothing did; error: refused)")
                    .Register(*registry_)),
      upstream_errors_(prometheus::BuildCounter()
                           .Name("understudy_upstream_errors_total")
                           .Help("Forwarded calls that failed, by API")
                           .Register(*registry_)),
      request_duration_(prometheus::BuildHistogram()
                            .Name("understudy_request_duration_seconds")
                            .Help("From a request received to its answer sent, by API")
                            .Register(*registry_)),
      store_write_(prometheus::BuildHistogram()
                       .Name("understudy_store_write_duration_seconds")
                       .Help("One batch of store writes (trace events, recordings, runs)")
                       .Register(*registry_)
                       .Add({}, StoreBuckets())),
      trace_queue_depth_(prometheus::BuildGauge()
                             .Name("understudy_trace_queue_depth")
                             .Help("Store writes queued and not yet committed")
                             .Register(*registry_)
                             .Add({})),
      runs_active_(prometheus::BuildGauge()
                       .Name("understudy_runs_active")
                       .Help("Runs started and not yet ended")
                       .Register(*registry_)
                       .Add({})) {}

Metrics::~Metrics() = default;

prometheus::Counter& Metrics::CounterFor(
    prometheus::Family<prometheus::Counter>& family,
    absl::flat_hash_map<std::string, prometheus::Counter*>& cache,
    std::initializer_list<absl::string_view> values) {
  const absl::string_view key = KeyOf(values, &key_buffer);
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = cache.find(key);
    if (it != cache.end()) return *it->second;
  }
  absl::MutexLock lock(&mu_);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  prometheus::Labels labels;
  static const char* const kNames[][3] = {{"api", "mode", "source"}, {"api", "", ""}};
  const char* const* names = values.size() == 3 ? kNames[0] : kNames[1];
  size_t i = 0;
  for (absl::string_view value : values) labels.emplace(names[i++], std::string(value));
  prometheus::Counter& counter = family.Add(labels);
  cache.emplace(std::string(key), &counter);
  return counter;
}

void Metrics::CountRequest(absl::string_view api, absl::string_view mode,
                           absl::string_view source) {
  CounterFor(requests_, request_counters_, {api, mode, source}).Increment();
}

void Metrics::CountUpstreamError(absl::string_view api) {
  CounterFor(upstream_errors_, error_counters_, {api}).Increment();
}

void Metrics::ObserveRequest(absl::string_view api, absl::Duration elapsed) {
  prometheus::Histogram* histogram = nullptr;
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = durations_.find(api);
    if (it != durations_.end()) histogram = it->second;
  }
  if (histogram == nullptr) {
    absl::MutexLock lock(&mu_);
    auto it = durations_.find(api);
    if (it == durations_.end()) {
      histogram = &request_duration_.Add({{"api", std::string(api)}}, RequestBuckets());
      durations_.emplace(std::string(api), histogram);
    } else {
      histogram = it->second;
    }
  }
  histogram->Observe(absl::ToDoubleSeconds(elapsed));
}

void Metrics::ObserveStoreWrite(absl::Duration elapsed) {
  store_write_.Observe(absl::ToDoubleSeconds(elapsed));
}

void Metrics::SetGaugeReader(std::function<GaugeReadings()> read) {
  absl::MutexLock lock(&mu_);
  read_gauges_ = std::move(read);
}

std::string Metrics::Exposition() {
  std::function<GaugeReadings()> read;
  {
    absl::ReaderMutexLock lock(&mu_);
    read = read_gauges_;
  }
  if (read) {
    const GaugeReadings readings = read();
    runs_active_.Set(static_cast<double>(readings.runs_active));
    trace_queue_depth_.Set(static_cast<double>(readings.trace_queue_depth));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace metrics
}  // namespace understudy
