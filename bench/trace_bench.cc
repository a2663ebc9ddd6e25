// trace_bench: the trace and ingest cases of bench/run.
//
//   trace_bench assert --target HOST:PORT --run ID [--repeat 20] [--queries N]
//       Times Traces.Assert (agent_sequence prefix, a count of tool_call
//       events, no_misses) --repeat times, then a full Traces.Query of the
//       run's tool_call events (every page) --queries times (default: as
//       many; 0 skips them and reports query_p50_ms=0).
//       Prints "RESULT label=assert events=N assert_p50_ms=.. assert_max_ms=..
//       query_p50_ms=.. query_events=..". Fails (exit 1) unless every Assert
//       passes: a fast error is not a result.
//
//   trace_bench ingest --target HOST:PORT --session NAME --count N [--batch 1000]
//                      [--streams 1] [--pad BYTES]
//       Streams N exchanges (bench_data's request and answer) through
//       Recorder.RecordExchanges, --batch per call (each call commits), from
//       --streams clients at once (each into its own session NAME-k when
//       more than one), and prints "RESULT label=ingest streams=S
//       exchanges=N seconds=.. per_s=..". --pad makes each answer's text
//       BYTES longer (a session of large answers, to grow a store).
//
//   trace_bench store --db PATH [--run ID]
//       Reads a store no server has open: its runs (Store::ListRuns), the
//       trace events of each (Store::CountEvents, whatever the schema
//       stores per row), then checkpoints its WAL into the file
//       (wal_checkpoint(TRUNCATE)) and sizes it. Prints "RESULT label=store
//       runs=N events=E run_events=R other_events=O file_bytes=F
//       used_bytes=U": R the events of run ID (0 without --run), O = E - R,
//       F = page_count * page_size, U = F - freelist_count * page_size.
//
//   trace_bench raw --db PATH --count N [--batch 1000]
//       The baseline: the same exchange rows inserted straight into SQLite
//       (a table shaped like understudy's exchanges: (session_id, seq) key,
//       agent index, WAL, synchronous=FULL), --batch rows per transaction.
//       Prints "RESULT label=raw exchanges=N seconds=.. per_s=..".
//
// Loopback targets only; every RPC has a deadline.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "bench/bench_data.h"
#include "grpcpp/grpcpp.h"
#include "store/store.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::unique_ptr<grpc::ClientContext> Context(int seconds = 60) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return c;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "trace_bench: %s\n", what.c_str());
  return 1;
}

struct Flags {
  std::string mode, target, run, session, db;
  int repeat = 20;
  int queries = -1;  // -1: as many as repeat
  int64_t count = 0;
  int batch = 1000;
  int streams = 1;
  int64_t pad = 0;
};

int Assert(const Flags& f) {
  auto channel = grpc::CreateChannel(f.target, grpc::InsecureChannelCredentials());
  auto traces = v1::Traces::NewStub(channel);
  v1::AssertRequest request;
  request.set_run(f.run);
  v1::Assertion* seq = request.add_assertions();
  seq->mutable_agent_sequence()->add_agents("executor");
  seq->mutable_agent_sequence()->set_match(v1::SEQUENCE_MATCH_PREFIX);
  v1::Assertion* count = request.add_assertions();
  count->mutable_count()->mutable_filter()->add_kinds("tool_call");
  count->mutable_count()->set_comparison(v1::COMPARISON_GE);
  count->mutable_count()->set_n(1);
  request.add_assertions()->set_no_misses(true);

  std::vector<double> asserts, queries;
  int64_t query_events = 0;
  for (int i = 0; i < f.repeat; ++i) {
    v1::AssertResponse response;
    const auto t0 = Clock::now();
    grpc::Status status = traces->Assert(Context().get(), request, &response);
    asserts.push_back(Ms(Clock::now() - t0));
    if (!status.ok()) return Fail(absl::StrCat("Assert: ", status.error_message()));
    if (!response.passed()) return Fail(absl::StrCat("Assert failed: ", response.report()));
  }
  for (int i = 0; i < f.queries; ++i) {
    v1::QueryRequest query;
    query.set_run(f.run);
    query.mutable_filter()->add_kinds("tool_call");
    query.set_limit(1000);
    int64_t seen = 0;
    const auto q0 = Clock::now();
    while (true) {
      v1::QueryResponse page;
      grpc::Status status = traces->Query(Context().get(), query, &page);
      if (!status.ok()) return Fail(absl::StrCat("Query: ", status.error_message()));
      seen += page.events_size();
      if (page.next_after_seq() == 0) break;
      query.set_after_seq(page.next_after_seq());
    }
    queries.push_back(Ms(Clock::now() - q0));
    query_events = seen;
  }
  if (queries.empty()) queries.push_back(0);
  std::sort(asserts.begin(), asserts.end());
  std::sort(queries.begin(), queries.end());
  std::printf("RESULT label=assert assert_p50_ms=%.2f assert_max_ms=%.2f query_p50_ms=%.2f "
              "query_events=%lld\n",
              asserts[asserts.size() / 2], asserts.back(), queries[queries.size() / 2],
              static_cast<long long>(query_events));
  return 0;
}

// `pad` more bytes of answer text (prose-like, so that nothing on the way
// sees a run of one byte).
v1::Exchange BenchExchange(int64_t i, int64_t pad = 0) {
  v1::Exchange e;
  e.set_agent("executor");
  *e.mutable_request() = BenchRequest(absl::StrCat("Step ", i, ": plan the next step."));
  *e.mutable_response() = BenchResponse();
  if (pad > 0) {
    static constexpr absl::string_view kProse =
        "The executor reads the failing test, finds the off-by-one in the parser's loop, "
        "fixes it, reruns the suite and reports what changed and why. ";
    std::string* text = e.mutable_response()->mutable_message()->mutable_content();
    const size_t want = text->size() + static_cast<size_t>(pad);
    absl::StrAppend(text, " [", i, "] ");
    while (text->size() < want) {
      text->append(kProse.data(), std::min(kProse.size(), want - text->size()));
    }
  }
  e.set_latency_micros(800);
  return e;
}

// One client stream of Ingest: exchanges [first, end) into `session`,
// f.batch per call; adds what was committed to *committed. Returns "" or
// what failed.
std::string IngestRange(const Flags& f, v1::Recorder::Stub* recorder, const std::string& session,
                        int64_t first, int64_t end, int64_t* committed) {
  for (int64_t start = first; start < end; start += f.batch) {
    const int64_t stop = std::min<int64_t>(end, start + f.batch);
    auto context = Context();
    v1::RecordExchangesResponse response;
    auto stream = recorder->RecordExchanges(context.get(), &response);
    for (int64_t i = start; i < stop; ++i) {
      v1::RecordExchangesRequest message;
      if (i == start) message.set_session(session);
      *message.mutable_exchange() = BenchExchange(i, f.pad);
      if (i == stop - 1) message.set_commit(true);
      if (!stream->Write(message)) break;
    }
    stream->WritesDone();
    grpc::Status status = stream->Finish();
    if (!status.ok()) return absl::StrCat("RecordExchanges: ", status.error_message());
    *committed += response.committed();
  }
  return "";
}

int Ingest(const Flags& f) {
  auto channel = grpc::CreateChannel(f.target, grpc::InsecureChannelCredentials());
  auto recorder = v1::Recorder::NewStub(channel);
  const auto t0 = Clock::now();
  // --streams clients at once, each into a session of its own (as several
  // test processes recording at the same time), over one channel.
  std::vector<int64_t> committed(static_cast<size_t>(f.streams), 0);
  std::vector<std::string> failures(static_cast<size_t>(f.streams));
  std::vector<std::thread> threads;
  for (int k = 0; k < f.streams; ++k) {
    const int64_t first = f.count * k / f.streams, end = f.count * (k + 1) / f.streams;
    const std::string session = f.streams == 1 ? f.session : absl::StrCat(f.session, "-", k);
    threads.emplace_back([&, k, first, end, session] {
      failures[static_cast<size_t>(k)] =
          IngestRange(f, recorder.get(), session, first, end, &committed[static_cast<size_t>(k)]);
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = Ms(Clock::now() - t0) / 1000;
  int64_t total = 0;
  for (int k = 0; k < f.streams; ++k) {
    if (!failures[static_cast<size_t>(k)].empty()) return Fail(failures[static_cast<size_t>(k)]);
    total += committed[static_cast<size_t>(k)];
  }
  if (total != f.count) return Fail(absl::StrCat("committed ", total, " of ", f.count));
  std::printf("RESULT label=ingest streams=%d exchanges=%lld seconds=%.3f per_s=%.0f\n", f.streams,
              static_cast<long long>(total), seconds, total / seconds);
  return 0;
}

int StoreStats(const Flags& f) {
  int64_t runs = 0, events = 0, run_events = 0;
  {
    store::StoreOptions options;
    options.path = f.db;
    options.create_if_missing = false;
    absl::StatusOr<std::unique_ptr<store::Store>> opened = store::Store::Open(options);
    if (!opened.ok()) return Fail(absl::StrCat(f.db, ": ", opened.status().ToString()));
    absl::StatusOr<std::vector<v1::Run>> all = (*opened)->ListRuns();
    if (!all.ok()) return Fail(absl::StrCat("ListRuns: ", all.status().ToString()));
    for (const v1::Run& run : *all) {
      absl::StatusOr<int64_t> n = (*opened)->CountEvents(run.id());
      if (!n.ok()) return Fail(absl::StrCat("CountEvents: ", n.status().ToString()));
      ++runs;
      events += *n;
      if (run.id() == f.run) run_events = *n;
    }
  }  // Closed: everything is committed.
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(f.db.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return Fail("cannot open " + f.db);
  }
  auto pragma = [&](const char* sql) -> int64_t {
    sqlite3_stmt* s = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      v = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    return v;
  };
  // Row 0 of wal_checkpoint is 0 unless it was blocked (SQLITE_BUSY).
  const int64_t busy = pragma("PRAGMA wal_checkpoint(TRUNCATE)");
  const int64_t page_size = pragma("PRAGMA page_size");
  const int64_t pages = pragma("PRAGMA page_count");
  const int64_t free_pages = pragma("PRAGMA freelist_count");
  sqlite3_close(db);
  if (busy != 0 || page_size <= 0 || pages < 0 || free_pages < 0) {
    return Fail(absl::StrCat(f.db, ": checkpoint or size pragmas failed (is a server using it?)"));
  }
  std::printf("RESULT label=store runs=%lld events=%lld run_events=%lld other_events=%lld "
              "file_bytes=%lld used_bytes=%lld\n",
              static_cast<long long>(runs), static_cast<long long>(events),
              static_cast<long long>(run_events), static_cast<long long>(events - run_events),
              static_cast<long long>(pages * page_size),
              static_cast<long long>((pages - free_pages) * page_size));
  return 0;
}

int Raw(const Flags& f) {
  std::remove(f.db.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(f.db.c_str(), &db) != SQLITE_OK) return Fail("cannot open " + f.db);
  auto exec = [&](const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      std::fprintf(stderr, "trace_bench: %s: %s\n", sql, error ? error : "?");
      sqlite3_free(error);
      return false;
    }
    return true;
  };
  if (!exec("PRAGMA journal_mode=WAL") || !exec("PRAGMA synchronous=FULL") ||
      !exec("CREATE TABLE exchanges (session_id INTEGER NOT NULL, seq INTEGER NOT NULL, "
            "agent TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY (session_id, seq))") ||
      !exec("CREATE INDEX exchanges_by_agent ON exchanges (session_id, agent, seq)")) {
    return 1;
  }
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO exchanges VALUES (1, ?1, ?2, ?3)", -1, &insert, nullptr);
  const auto t0 = Clock::now();
  std::string body;
  for (int64_t start = 0; start < f.count; start += f.batch) {
    const int64_t end = std::min<int64_t>(f.count, start + f.batch);
    if (!exec("BEGIN IMMEDIATE")) return 1;
    for (int64_t i = start; i < end; ++i) {
      v1::Exchange e = BenchExchange(i);  // built as the ingest client builds it
      e.set_seq(i + 1);
      body.clear();
      e.SerializeToString(&body);
      sqlite3_bind_int64(insert, 1, i + 1);
      sqlite3_bind_text(insert, 2, e.agent().data(), static_cast<int>(e.agent().size()),
                        SQLITE_TRANSIENT);
      sqlite3_bind_blob(insert, 3, body.data(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(insert) != SQLITE_DONE) return Fail(sqlite3_errmsg(db));
      sqlite3_reset(insert);
    }
    if (!exec("COMMIT")) return 1;
  }
  const double seconds = Ms(Clock::now() - t0) / 1000;
  sqlite3_finalize(insert);
  sqlite3_close(db);
  std::printf("RESULT label=raw exchanges=%lld seconds=%.3f per_s=%.0f\n",
              static_cast<long long>(f.count), seconds, f.count / seconds);
  return 0;
}

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "trace_bench: %s\n"
               "usage: trace_bench assert --target HOST:PORT --run ID [--repeat N] [--queries N]\n"
               "       trace_bench ingest --target HOST:PORT --session NAME --count N [--batch N] "
               "[--streams N] [--pad BYTES]\n"
               "       trace_bench store --db PATH [--run ID]\n"
               "       trace_bench raw --db PATH --count N [--batch N]\n",
               why.c_str());
  return 2;
}

}  // namespace
}  // namespace bench
}  // namespace understudy

int main(int argc, char** argv) {
  using understudy::bench::Usage;
  if (argc < 2) return Usage("give a mode");
  understudy::bench::Flags f;
  f.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return Usage("missing value for " + flag);
    const std::string v = argv[++i];
    bool ok = true;
    if (flag == "--target") {
      f.target = v;
    } else if (flag == "--run") {
      f.run = v;
    } else if (flag == "--session") {
      f.session = v;
    } else if (flag == "--db") {
      f.db = v;
    } else if (flag == "--repeat") {
      ok = absl::SimpleAtoi(v, &f.repeat) && f.repeat >= 1;
    } else if (flag == "--queries") {
      ok = absl::SimpleAtoi(v, &f.queries) && f.queries >= 0;
    } else if (flag == "--count") {
      ok = absl::SimpleAtoi(v, &f.count) && f.count >= 1;
    } else if (flag == "--streams") {
      ok = absl::SimpleAtoi(v, &f.streams) && f.streams >= 1 && f.streams <= 64;
    } else if (flag == "--pad") {
      ok = absl::SimpleAtoi(v, &f.pad) && f.pad >= 0 && f.pad <= (64 << 20);
    } else if (flag == "--batch") {
      ok = absl::SimpleAtoi(v, &f.batch) && f.batch >= 1 && f.batch <= 100000;
    } else {
      return Usage("unknown flag " + flag);
    }
    if (!ok) return Usage("bad value for " + flag + ": " + v);
  }
  if (f.mode != "raw" && f.mode != "store" && !absl::StartsWith(f.target, "127.")) {
    return Usage("--target: a 127.x.x.x address is required");
  }
  if (f.mode == "assert") {
    if (f.run.empty()) return Usage("--run is required");
    if (f.queries < 0) f.queries = f.repeat;
    return understudy::bench::Assert(f);
  }
  if (f.mode == "ingest") {
    if (f.session.empty() || f.count == 0) return Usage("--session and --count are required");
    return understudy::bench::Ingest(f);
  }
  if (f.mode == "store") {
    if (f.db.empty()) return Usage("--db is required");
    return understudy::bench::StoreStats(f);
  }
  if (f.mode == "raw") {
    if (f.db.empty() || f.count == 0) return Usage("--db and --count are required");
    return understudy::bench::Raw(f);
  }
  return Usage("unknown mode " + f.mode);
}
