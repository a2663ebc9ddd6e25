#include "cli/inspect.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "engine/engine.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "query/assert.h"
#include "query/events.h"
#include "scenario/scenario.h"
#include "sim/config.h"
#include "store/store.h"
#include "trace/assertions.h"
#include "trace/proto_json.h"
#include "trace/spec.h"
#include "trace/vocabulary.h"
#include "understudy/v1/understudy.grpc.pb.h"

namespace understudy {
namespace cli {
namespace {

using trace::ToJson;

// A string as a JSON literal, cut to `max` bytes with an ellipsis.
std::string Quote(const std::string& s, size_t max = 60) {
  std::string cut = s.size() > max ? s.substr(0, max) + "…" : s;
  return nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace


int Trace(const DbFlags& db, const std::string& run, const std::vector<std::string>& kinds,
          const std::string& agent) {
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  store::EventQuery selected;
  selected.run = run;
  selected.kinds = kinds;
  selected.agent = agent;
  if (!(*store)->GetRun(run).ok()) {
    return Fail(absl::NotFoundError(absl::StrCat("unknown run \"", run, "\" in ", db.db)));
  }
  absl::Status read = query::ForEachEvent(**store, std::move(selected), [&](v1::TraceEvent& e) {
    if (db.json) {
      std::cout << ToJson(e) << "\n";
      return true;
    }
    std::cout << "#" << e.seq() << " " << e.kind();
    if (!e.agent().empty()) std::cout << " " << e.agent();
    std::map<std::string, std::string> attrs(e.attributes().begin(), e.attributes().end());
    for (const auto& [k, v] : attrs) {
      if (k == trace::attr::kGenAiAgentName || k == trace::attr::kMissReport) continue;
      std::cout << " " << k << "=" << (v.find(' ') == std::string::npos ? v : Quote(v, 200));
    }
    std::cout << "\n";
    auto report = attrs.find(trace::attr::kMissReport);
    if (report != attrs.end()) std::cout << "    " << report->second << "\n";
    return true;
  });
  if (!read.ok()) return Fail(read);
  return 0;
}

int Show(const DbFlags& db, const std::string& ref, ColorMode color) {
  // A read-only command: do not leave an empty database behind a typo.
  if (::access(db.db.c_str(), F_OK) != 0) {
    std::cerr << "understudy: cannot open database " << db.db << ": " << std::strerror(errno)
              << std::endl;
    return 3;
  }
  auto store = OpenStore(db);
  if (!store.ok()) {
    std::cerr << "understudy: " << db.db << ": " << store.status().message() << std::endl;
    return 3;
  }
  query::TimelineOptions options;
  options.color = ShouldColor(color, ::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"));
  auto unknown = [&] {
    return Fail(
        absl::NotFoundError(absl::StrCat("unknown run or session \"", ref, "\" in ", db.db)));
  };
  auto failed = [](const absl::Status& status) {
    std::cerr << "understudy: " << status.message() << std::endl;
    return 3;
  };

  absl::StatusOr<v1::Run> run = (*store)->GetRun(ref);
  if (run.ok()) {
    store::EventQuery selected;
    selected.run = ref;
    selected.limit = query::kMaxPage;
    // Text: page by page, keeping back trailing answer effects for the page
    // that may hold their answer (see FormatTimeline).
    std::vector<v1::TraceEvent> pending;
    absl::Status read = query::ForEachPage(
        **store, std::move(selected), [&](std::vector<v1::TraceEvent>& page, bool last) {
          if (db.json) {
            for (const v1::TraceEvent& e : page) std::cout << ToJson(e) << "\n";
            return true;
          }
          for (v1::TraceEvent& e : page) pending.push_back(std::move(e));
          size_t keep = pending.size();
          while (!last && keep > 0 && query::IsAnswerEffect(pending[keep - 1])) --keep;
          std::vector<v1::TraceEvent> later(std::make_move_iterator(pending.begin() + keep),
                                            std::make_move_iterator(pending.end()));
          pending.resize(keep);
          for (const std::string& line : query::FormatTimeline(pending, options)) {
            std::cout << line << "\n";
          }
          pending = std::move(later);
          return true;
        });
    if (!read.ok()) return failed(read);
    std::cout.flush();
    return std::cout ? 0 : 3;
  }
  if (!absl::IsNotFound(run.status())) return failed(run.status());

  auto parsed = engine::ParseSessionRef(ref);
  if (!parsed.ok()) return unknown();
  auto session = (*store)->GetSession(parsed->first, parsed->second);
  if (absl::IsNotFound(session.status())) return unknown();
  if (!session.ok()) return failed(session.status());
  auto exchanges = (*store)->LoadExchanges(session->name(), session->version());
  if (!exchanges.ok()) return failed(exchanges.status());
  if (db.json) {
    for (const v1::Exchange& e : *exchanges) std::cout << ToJson(e) << "\n";
  } else {
    for (const std::string& line : query::FormatSessionTimeline(*session, *exchanges, options)) {
      std::cout << line << "\n";
    }
  }
  std::cout.flush();
  return std::cout ? 0 : 3;
}

namespace {

std::string Plural(int n, const char* word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

}  // namespace

int Validate(const std::vector<std::string>& files, bool json) {
  int errors = 0;
  int warnings = 0;
  bool unreadable = false;
  nlohmann::json reports = nlohmann::json::array();
  for (const std::string& file : files) {
    absl::StatusOr<std::string> path = scenario::ResolveScenario(file);
    absl::StatusOr<std::string> text =
        path.ok() ? scenario::ReadScenarioFile(*path) : absl::StatusOr<std::string>(path.status());
    if (!text.ok()) {
      std::cerr << "understudy: " << text.status().message() << "\n";
      unreadable = true;
      continue;
    }
    // A sim config (`understudy sim --config`) is told apart by its
    // schema or its `behaviours`; anything else is judged as a scenario.
    scenario::ValidationReport report = sim::LooksLikeSimConfig(*text)
                                            ? sim::ValidateSimConfig(*text, *path)
                                            : scenario::ValidateScenario(*text, *path);
    errors += report.errors();
    warnings += report.warnings();
    if (json) {
      reports.push_back(scenario::ReportToJson(report));
    } else {
      for (const scenario::Problem& p : report.problems) {
        std::cout << scenario::FormatProblem(report, p) << "\n";
      }
    }
  }
  if (json) {
    nlohmann::json out = {{"files", std::move(reports)}, {"errors", errors}, {"warnings", warnings}};
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << Plural(errors, "error") << ", " << Plural(warnings, "warning") << " in "
              << Plural(static_cast<int>(files.size()), "file") << "\n";
  }
  std::cout.flush();
  if (unreadable) return 3;
  return errors > 0 ? 1 : 0;
}

namespace {

// Reads a spec file, bounded: a larger file is refused before parsing.
absl::StatusOr<std::string> ReadSpecFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string text(trace::kMaxSpecBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > trace::kMaxSpecBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": larger than ", trace::kMaxSpecBytes, " bytes; split it into smaller specs"));
  }
  return text;
}

// The run's whole trace and its summary (none while the run is active),
// from the database.
absl::StatusOr<v1::AssertResponse> AssertFromStore(const DbFlags& db, const std::string& run,
                                                   const std::vector<v1::Assertion>& assertions) {
  if (::access(db.db.c_str(), F_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open database ", db.db, ": ", std::strerror(errno)));
  }
  US_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, OpenStore(db));
  if (!store->GetRun(run).ok()) {
    return absl::NotFoundError(absl::StrCat("unknown run \"", run, "\" in ", db.db));
  }
  google::protobuf::RepeatedPtrField<v1::Assertion> checks(assertions.begin(), assertions.end());
  return query::AssertRun(query::Source{store.get()}, run, checks);
}

// The same through a running server's Traces.Assert.
absl::StatusOr<v1::AssertResponse> AssertFromServer(const std::string& addr, const std::string& run,
                                                    const std::vector<v1::Assertion>& assertions) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(addr, grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::Traces::Stub> traces = v1::Traces::NewStub(channel);
  v1::AssertRequest request;
  request.set_run(run);
  for (const v1::Assertion& a : assertions) *request.add_assertions() = a;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::AssertResponse response;
  grpc::Status status = traces->Assert(&context, request, &response);
  if (status.ok()) return response;
  const std::string message = absl::StrCat(addr, ": ", status.error_message());
  switch (status.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(message);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::FailedPreconditionError(message);
    default:
      return absl::UnavailableError(message);
  }
}

}  // namespace

absl::StatusOr<std::vector<v1::Assertion>> LoadSpecs(const std::vector<std::string>& spec_files) {
  std::vector<v1::Assertion> assertions;
  bool invalid = false;
  for (const std::string& file : spec_files) {
    absl::StatusOr<std::string> text = ReadSpecFile(file);
    if (!text.ok()) {
      std::cerr << "understudy: " << text.status().message() << std::endl;
      if (!absl::IsInvalidArgument(text.status())) return text.status();
      invalid = true;
      continue;
    }
    absl::StatusOr<std::vector<v1::Assertion>> parsed = trace::ParseSpec(*text, file);
    if (!parsed.ok()) {
      std::cerr << parsed.status().message() << std::endl;
      invalid = true;
      continue;
    }
    for (v1::Assertion& a : *parsed) assertions.push_back(std::move(a));
  }
  if (invalid) return absl::InvalidArgumentError("invalid spec");
  if (assertions.empty()) {
    std::cerr << "understudy: " << absl::StrJoin(spec_files, ", ")
              << ": no assertions; list them under `assertions:`" << std::endl;
    return absl::InvalidArgumentError("no assertions");
  }
  return assertions;
}

int CheckRun(const DbFlags& db, const std::string& addr, const std::string& run,
             const std::vector<v1::Assertion>& assertions) {
  absl::StatusOr<v1::AssertResponse> verdict = addr.empty()
                                                   ? AssertFromStore(db, run, assertions)
                                                   : AssertFromServer(addr, run, assertions);
  if (!verdict.ok()) {
    std::cerr << "understudy: " << verdict.status().message() << std::endl;
    return absl::IsInvalidArgument(verdict.status()) ? 2 : 3;
  }
  if (db.json) {
    std::cout << ToJson(*verdict, /*all_fields=*/true) << "\n";
  } else {
    int passed = 0;
    for (const v1::AssertionResult& r : verdict->results()) {
      std::cout << trace::ReportLine(r) << "\n";
      passed += r.passed() ? 1 : 0;
    }
    std::cout << passed << " of " << Plural(verdict->results_size(), "check") << " passed\n";
  }
  return verdict->passed() ? 0 : 1;
}

int Assert(const DbFlags& db, const std::string& addr, const std::string& run,
           const std::vector<std::string>& spec_files) {
  absl::StatusOr<std::vector<v1::Assertion>> assertions = LoadSpecs(spec_files);
  if (!assertions.ok()) return absl::IsInvalidArgument(assertions.status()) ? 2 : 3;
  return CheckRun(db, addr, run, *assertions);
}

}  // namespace cli
}  // namespace understudy
