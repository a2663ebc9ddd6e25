// The trace: queueing events for the writer in batches, Flush, and
// scanning and paging a run's events.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "store/proto_utf8.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "store/trace_codec.h"
#include "store/trace_table.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

using internal::ReaderPool;

namespace {

constexpr int kDefaultQueryLimit = 1000;
constexpr int kMaxQueryLimit = 10000;

}  // namespace

// --- Trace -------------------------------------------------------------------

void Store::AppendEvents(std::vector<v1::TraceEvent> events) {
  if (events.empty()) return;
  std::vector<TraceRecord> records;
  records.reserve(events.size());
  for (v1::TraceEvent& event : events) records.push_back(InlineRecord(std::move(event)));
  impl_->QueueEvents(records);
}

void Store::AppendRecords(std::vector<TraceRecord> records) {
  if (records.empty()) return;
  impl_->QueueEvents(records);
}

void Store::Impl::EnqueueEventDrain() {
  {
    absl::MutexLock lock(&events_mu_);
    if (pending_events_.empty() || drain_queued_) return;
    drain_queued_ = true;
  }
  auto op = [this](sql::Database& db) -> absl::Status {
    std::vector<TraceRecord> records = TakeEvents();
    std::string body;
    for (TraceRecord& record : records) {
      const std::string run = record.event.run();
      const int64_t seq = record.event.seq();
      absl::Status status = trace_.Insert(db, record, &body);
      if (!status.ok()) {
        // A failed statement undoes only itself; unless SQLite gave up on
        // the whole transaction, the other events still go in, and the
        // error waits for Flush.
        if (!db.InTransaction()) {
          trace_.ForgetUncommitted();
          return status;
        }
        RecordEventError(absl::Status(
            status.code(),
            absl::StrCat("trace event (run \"", run, "\", seq ", seq, "): ", status.message())));
      }
    }
    return absl::OkStatus();
  };
  writer().Enqueue(std::move(op), [this](absl::Status status) {
    if (!status.ok()) {
      trace_.ForgetUncommitted();
      RecordEventError(
          absl::Status(status.code(), absl::StrCat("trace events lost: ", status.message())));
    }
  });
}

absl::Status Store::Flush() {
  impl_->EnqueueEventDrain();
  US_RETURN_IF_ERROR(impl_->writer().Flush());
  return impl_->TakeEventError();
}

int64_t Store::PendingWrites() {
  return impl_->QueuedEvents() + impl_->writer().stats().queued_ops;
}

namespace {

TraceScan ScanOf(const EventQuery& query, int64_t limit, bool body_when_no_agent) {
  TraceScan scan;
  scan.run = query.run;
  scan.kinds = query.kinds;
  scan.agent = query.agent;
  scan.tool = query.tool;
  scan.after_seq = query.after_seq;
  scan.limit = limit;
  scan.body_when_no_agent = body_when_no_agent;
  return scan;
}

}  // namespace

absl::Status Store::ScanEvents(const EventQuery& query, Bodies bodies,
                               const std::function<bool(const StoredEvent&)>& fn) {
  return ScanEvents(std::vector<EventScan>{{query, bodies}}, fn);
}

absl::Status Store::ScanEvents(const std::vector<EventScan>& scans,
                               const std::function<bool(const StoredEvent&)>& fn,
                               const std::function<void()>& scan_done) {
  for (const EventScan& scan : scans) {
    if (scan.query.run.empty()) return absl::InvalidArgumentError("query.run is empty");
  }
  ReaderPool::Lease lease = impl_->readers().Acquire();
  sql::Transaction snapshot(&lease.db());
  if (scans.size() > 1) US_RETURN_IF_ERROR(snapshot.Begin());
  for (const EventScan& scan : scans) {
    bool stopped = false;
    US_RETURN_IF_ERROR(impl_->trace().Scan(
        lease.db(), ScanOf(scan.query, -1, scan.bodies == Bodies::kWhenNoAgent),
        [&](const TraceRow& row) {
          StoredEvent event;
          event.seq = row.seq;
          event.kind = row.kind;
          event.agent = row.agent;
          event.body = row.body;
          event.legacy = row.legacy;
          stopped = !fn(event);
          return !stopped;
        }));
    if (stopped) return absl::OkStatus();
    if (scan_done) scan_done();
  }
  return absl::OkStatus();
}

absl::StatusOr<EventPage> Store::QueryEvents(const EventQuery& query) {
  if (query.run.empty()) return absl::InvalidArgumentError("query.run is empty");
  int limit = query.limit <= 0 ? kDefaultQueryLimit : query.limit;
  if (limit > kMaxQueryLimit) limit = kMaxQueryLimit;

  ReaderPool::Lease lease = impl_->readers().Acquire();
  EventPage page;
  // Room for the whole page: growing a vector of messages moves each one.
  page.events.reserve(static_cast<size_t>(limit) + 1);
  absl::Status parse_error;
  // One more than asked: whether it exists says whether there is a next page.
  US_RETURN_IF_ERROR(impl_->trace().Scan(
      lease.db(), ScanOf(query, static_cast<int64_t>(limit) + 1, false),
      [&](const TraceRow& row) {
        if (static_cast<int>(page.events.size()) == limit) {
          page.next_after_seq = page.events.back().seq();
          return false;
        }
        v1::TraceEvent& event = page.events.emplace_back();
        if (!ParseStored(row.body, &event).ok()) {
          parse_error = absl::DataLossError(absl::StrCat(
              "run \"", query.run, "\": stored event seq ", row.seq, " does not parse"));
          return false;
        }
        return true;
      }));
  US_RETURN_IF_ERROR(parse_error);
  return page;
}

}  // namespace store
}  // namespace understudy
