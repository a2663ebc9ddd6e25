// check_documents KIND FILE...: runs this build's validator for KIND
// (scenario: scenario::ValidateScenario; spec: trace::ValidateSpec;
// session: store::ParseSessionFile; sim and sim-meow: sim::ValidateSimConfig,
// which tells the dialects apart) on each file and prints one JSON object
// per line, {"file", "ok", "problems": ["formatted problem", ...]}. The
// schema agreement test (schemas_agree_test.py) compares these verdicts with
// the JSON Schemas'. Exit 0 when every file was read, 3 otherwise; 2 on
// usage errors.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "sim/config.h"
#include "store/session_file.h"
#include "trace/spec.h"
#include "validation/problems.h"

namespace {

using understudy::validation::Report;

nlohmann::json Verdict(const std::string& kind, const std::string& file, const std::string& text) {
  nlohmann::json out = {{"file", file}, {"ok", true}, {"problems", nlohmann::json::array()}};
  if (kind == "session") {
    absl::StatusOr<understudy::store::SessionFile> parsed =
        understudy::store::ParseSessionFile(text);
    if (!parsed.ok()) {
      out["ok"] = false;
      out["problems"].push_back(std::string(parsed.status().message()));
    }
    return out;
  }
  const Report report = kind == "scenario" ? understudy::scenario::ValidateScenario(text, file)
                        : kind == "sim" || kind == "sim-meow"
                            ? understudy::sim::ValidateSimConfig(text, file)
                                           : understudy::trace::ValidateSpec(text, file);
  out["ok"] = report.ok();
  for (const auto& p : report.problems) {
    out["problems"].push_back(understudy::validation::FormatProblem(report, p));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: check_documents scenario|spec|session|sim|sim-meow FILE...\n";
    return 2;
  }
  const std::string kind = argv[1];
  if (kind != "scenario" && kind != "spec" && kind != "session" && kind != "sim" &&
      kind != "sim-meow") {
    std::cerr << "check_documents: unknown kind \"" << kind << "\"\n";
    return 2;
  }
  int code = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::cerr << "check_documents: cannot read " << argv[i] << "\n";
      code = 3;
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::cout << Verdict(kind, argv[i], text.str())
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  }
  return code;
}
