#include "cli/runs.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "base/duration.h"
#include "base/env.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "store/retention.h"
#include "store/store.h"
#include "trace/proto_json.h"

namespace understudy {
namespace cli {
namespace {

// The lower-case word of an enum value: RUN_MODE_REPLAY → "replay".
std::string Word(const std::string& value_name, absl::string_view prefix) {
  return absl::AsciiStrToLower(absl::StripPrefix(value_name, prefix));
}

// A run as `runs ls` prints it, with its stored trace events.
struct Listed {
  v1::Run run;
  int64_t events = 0;
};

void PrintTable(const std::vector<Listed>& runs, bool json) {
  if (json) {
    for (const Listed& r : runs) {
      nlohmann::ordered_json line = nlohmann::ordered_json::parse(trace::ToJson(r.run, true));
      // int64 as a string, as proto3 JSON writes the run's own counts.
      line["events"] = absl::StrCat(r.events);
      std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    return;
  }
  std::printf("%-24s %-20s %-11s %-6s %-7s %-20s %10s %7s %8s %6s %8s\n", "ID", "SESSION", "MODE",
              "STATE", "TRACE", "STARTED", "DURATION", "SERVED", "RECORDED", "MISSES", "EVENTS");
  for (const Listed& r : runs) {
    const v1::Run& run = r.run;
    const std::string session =
        run.session().empty() ? "-" : absl::StrCat(run.session(), "@", run.session_version());
    const std::string started = absl::FormatTime(
        "%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMicros(run.started_at_micros()), absl::UTCTimeZone());
    std::string duration = "-";
    if (run.state() != v1::RUN_STATE_ACTIVE && run.ended_at_micros() >= run.started_at_micros()) {
      duration = absl::FormatDuration(
          absl::Trunc(absl::Microseconds(run.ended_at_micros() - run.started_at_micros()),
                      absl::Milliseconds(1)));
    }
    std::printf("%-24s %-20s %-11s %-6s %-7s %-20s %10s %7lld %8lld %6lld %8lld\n",
                run.id().c_str(), session.c_str(),
                Word(v1::RunMode_Name(run.mode()), "RUN_MODE_").c_str(),
                Word(v1::RunState_Name(run.state()), "RUN_STATE_").c_str(),
                TraceLevelName(run.trace_level()).c_str(), started.c_str(), duration.c_str(),
                static_cast<long long>(run.served()), static_cast<long long>(run.recorded()),
                static_cast<long long>(run.misses()), static_cast<long long>(r.events));
  }
  std::fflush(stdout);
}

// `runs` with their stored event counts.
absl::StatusOr<std::vector<Listed>> WithEvents(store::Store& store, std::vector<v1::Run> runs) {
  std::vector<Listed> listed;
  listed.reserve(runs.size());
  for (v1::Run& run : runs) {
    absl::StatusOr<int64_t> events = store.CountEvents(run.id());
    if (!events.ok()) return events.status();
    listed.push_back(Listed{std::move(run), *events});
  }
  return listed;
}

std::string Runs(int64_t n) { return absl::StrCat(n, n == 1 ? " run" : " runs"); }
std::string Events(int64_t n) {
  return absl::StrCat(n, n == 1 ? " trace event" : " trace events");
}

// "(M trace events); the file shrank by B bytes": what a removal freed.
std::string Freed(int64_t events, int64_t bytes) {
  return absl::StrCat("(", Events(events), "); the file shrank by ", bytes,
                      bytes == 1 ? " byte" : " bytes");
}

// A usage error of `runs prune`, in the words of the flag parser's.
int PruneUsage(absl::string_view message) {
  std::cerr << "understudy: " << message << " (see `understudy runs prune --help`)" << std::endl;
  return 2;
}

}  // namespace

std::string TraceLevelName(v1::TraceLevel level) {
  return Word(v1::TraceLevel_Name(level), "TRACE_LEVEL_");
}

std::optional<v1::TraceLevel> ParseTraceLevel(absl::string_view name) {
  for (v1::TraceLevel level : {v1::TRACE_LEVEL_FULL, v1::TRACE_LEVEL_SUMMARY, v1::TRACE_LEVEL_OFF}) {
    if (name == TraceLevelName(level)) return level;
  }
  return std::nullopt;
}

int RunsList(const DbFlags& db, const std::string& session) {
  std::optional<std::pair<std::string, int64_t>> only;
  if (!session.empty()) {
    absl::StatusOr<std::pair<std::string, int64_t>> parsed = engine::ParseSessionRef(session);
    if (!parsed.ok()) return Fail(parsed.status());
    only = *parsed;
  }
  absl::StatusOr<std::unique_ptr<store::Store>> store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  absl::StatusOr<std::vector<v1::Run>> runs =
      only.has_value() ? (*store)->ListRunsOfSession(only->first, only->second)
                       : (*store)->ListRuns();
  if (!runs.ok()) return Fail(absl::UnavailableError(runs.status().message()));
  if (runs->empty()) {
    std::cerr << "no runs" << (only.has_value() ? " of " + session : "") << " in " << db.db
              << "\n";
    return 0;
  }
  absl::StatusOr<std::vector<Listed>> listed = WithEvents(**store, *std::move(runs));
  if (!listed.ok()) return Fail(absl::UnavailableError(listed.status().message()));
  PrintTable(*listed, db.json);
  return std::cout ? 0 : 3;
}

int RunsRemove(const DbFlags& db, const std::vector<std::string>& ids, bool force) {
  absl::StatusOr<std::unique_ptr<store::Store>> store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  std::vector<std::string> doomed;
  int64_t events = 0;
  bool refused = false;
  std::set<std::string> seen;
  for (const std::string& id : ids) {
    if (!seen.insert(id).second) continue;
    absl::StatusOr<v1::Run> run = (*store)->GetRun(id);
    if (absl::IsNotFound(run.status())) {
      std::cerr << "understudy: unknown run \"" << id << "\" in " << db.db << std::endl;
      refused = true;
      continue;
    }
    if (!run.ok()) return Fail(absl::UnavailableError(run.status().message()));
    if (run->state() == v1::RUN_STATE_ACTIVE && !force) {
      std::cerr << "understudy: run \"" << id
                << "\" is active: its server may still be writing it (a run whose server died "
                   "stays active in the store); add --force to delete it anyway"
                << std::endl;
      refused = true;
      continue;
    }
    absl::StatusOr<int64_t> count = (*store)->CountEvents(id);
    if (!count.ok()) return Fail(absl::UnavailableError(count.status().message()));
    events += *count;
    doomed.push_back(id);
  }
  int64_t deleted = 0;
  int64_t bytes = 0;
  if (!doomed.empty()) {
    absl::StatusOr<int64_t> n = (*store)->DeleteRuns(doomed);
    if (!n.ok()) return Fail(absl::UnavailableError(n.status().message()));
    deleted = *n;
    absl::StatusOr<int64_t> shrunk = (*store)->ReclaimSpace(0);
    if (!shrunk.ok()) return Fail(absl::UnavailableError(shrunk.status().message()));
    bytes = *shrunk;
  }
  std::cerr << "deleted " << Runs(deleted) << " " << Freed(events, bytes) << "\n";
  return refused ? 1 : 0;
}

int RunsPrune(const DbFlags& db, const PruneFlags& flags) {
  store::RetentionRule rule;
  if (!flags.older_than.empty()) {
    absl::StatusOr<absl::Duration> age = ParseDuration(flags.older_than);
    if (!age.ok()) return PruneUsage(absl::StrCat("--older-than: ", age.status().message()));
    rule.older_than = *age;
  }
  if (flags.keep < -1) return PruneUsage(absl::StrCat("--keep: must be 0 or more, got ", flags.keep));
  if (flags.keep >= 0) rule.keep_per_session = flags.keep;
  bool active = false;
  for (const std::string& state : flags.states) {
    if (state == "ended") {
      rule.states.push_back(v1::RUN_STATE_ENDED);
    } else if (state == "failed") {
      rule.states.push_back(v1::RUN_STATE_FAILED);
    } else if (state == "active" || state == "any") {
      active = true;
      rule.states.push_back(v1::RUN_STATE_ACTIVE);
      if (state == "any") {
        rule.states.push_back(v1::RUN_STATE_ENDED);
        rule.states.push_back(v1::RUN_STATE_FAILED);
      }
    } else {
      return PruneUsage(absl::StrCat("--state \"", state,
                                     "\": expected ended, failed, active or any"));
    }
  }
  if (!rule.older_than.has_value() && !rule.keep_per_session.has_value() && rule.states.empty()) {
    return PruneUsage("runs prune: give at least one of --older-than, --keep and --state");
  }
  if (active && !flags.force) {
    return PruneUsage(
        "--state active and any select runs a server may still be writing (a run whose server "
        "died stays active in the store): add --force");
  }

  absl::StatusOr<std::unique_ptr<store::Store>> store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  absl::StatusOr<std::vector<v1::Run>> runs = (*store)->ListRuns();
  if (!runs.ok()) return Fail(absl::UnavailableError(runs.status().message()));
  const std::vector<std::string> ids = store::SelectRuns(*runs, rule, Env::Default()->Now());
  const std::set<std::string> chosen(ids.begin(), ids.end());
  std::vector<v1::Run> doomed;
  for (v1::Run& run : *runs) {
    if (chosen.count(run.id()) > 0) doomed.push_back(std::move(run));
  }
  absl::StatusOr<std::vector<Listed>> listed = WithEvents(**store, std::move(doomed));
  if (!listed.ok()) return Fail(absl::UnavailableError(listed.status().message()));
  int64_t events = 0;
  for (const Listed& r : *listed) events += r.events;
  if (!listed->empty()) PrintTable(*listed, db.json);

  if (flags.dry_run) {
    std::cerr << "would remove " << Runs(static_cast<int64_t>(ids.size())) << " (" << Events(events)
              << "); dry run: nothing removed\n";
    return 0;
  }
  int64_t deleted = 0;
  if (!ids.empty()) {
    absl::StatusOr<int64_t> n = (*store)->DeleteRuns(ids);
    if (!n.ok()) return Fail(absl::UnavailableError(n.status().message()));
    deleted = *n;
  }
  // Also with nothing deleted: space freed by earlier deletes (a server's,
  // or `--vacuum` for an old store) goes back too.
  absl::StatusOr<int64_t> shrunk = (*store)->ReclaimSpace(0, flags.vacuum);
  if (!shrunk.ok()) return Fail(absl::UnavailableError(shrunk.status().message()));
  std::cerr << "removed " << Runs(deleted) << " " << Freed(events, *shrunk) << "\n";
  if (deleted > 0 && *shrunk == 0 && !flags.vacuum) {
    std::cerr << "understudy: nothing went back to the filesystem; a store created by an older "
                 "understudy needs `understudy runs prune --vacuum` once\n";
  }
  return 0;
}

}  // namespace cli
}  // namespace understudy
