#include "cli/gen_spec.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "nlohmann/json.hpp"
#include "store/store.h"
#include "testgen/run_source.h"

namespace understudy {
namespace cli {
namespace {

// Each call to a server, as `assert --addr` allows it.
constexpr absl::Duration kServerTimeout = absl::Seconds(30);

// The run, from the database (opened read only: a mistyped --db is an
// error, not a new empty database) or the server.
absl::StatusOr<testgen::RunData> Load(const DbFlags& db, const std::string& addr,
                                      const std::string& ref) {
  if (!addr.empty()) {
    return testgen::LoadRun(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()), ref,
                            kServerTimeout);
  }
  absl::StatusOr<std::unique_ptr<store::Store>> store = OpenStore(db);
  if (!store.ok()) return store.status();
  absl::StatusOr<testgen::RunData> run = testgen::LoadRun(**store, ref);
  if (!run.ok() && absl::IsNotFound(run.status())) {
    return absl::NotFoundError(absl::StrCat(run.status().message(), " in ", db.db));
  }
  return run;
}

}  // namespace

int GenSpec(const DbFlags& db, const std::string& addr, const std::string& ref,
            const testgen::SpecOptions& options, const std::string& output) {
  absl::StatusOr<testgen::RunData> run = Load(db, addr, ref);
  if (!run.ok()) {
    // An empty ref is a usage error; what is not there is 1, the rest 3.
    if (absl::IsInvalidArgument(run.status())) {
      std::cerr << "understudy: " << run.status().message() << std::endl;
      return 2;
    }
    return Fail(run.status());
  }
  absl::StatusOr<testgen::GeneratedSpec> spec = testgen::GenerateSpec(*run, options);
  if (!spec.ok()) {
    std::cerr << "understudy: " << spec.status().message() << std::endl;
    return absl::IsInvalidArgument(spec.status()) ? 2 : 1;
  }
  const bool to_stdout = output.empty() || output == "-";
  if (!to_stdout) {
    absl::Status written = WriteFileAtomically(output, spec->yaml);
    if (!written.ok()) return Fail(written);  // UNAVAILABLE: 3
  }
  if (db.json) {
    nlohmann::json out = {{"run", spec->run},
                          {"session", spec->session},
                          {"checks", spec->checks},
                          {"output", to_stdout ? "" : output}};
    if (to_stdout) out["spec"] = spec->yaml;
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (to_stdout) {
    std::cout.write(spec->yaml.data(), static_cast<std::streamsize>(spec->yaml.size()));
  } else {
    std::cerr << "wrote " << output << ": " << spec->checks
              << (spec->checks == 1 ? " check" : " checks") << " of run " << spec->run << "\n";
  }
  std::cout.flush();
  return std::cout ? 0 : 3;
}

}  // namespace cli
}  // namespace understudy
