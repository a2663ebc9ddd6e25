#include "cli/command_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "store/store.h"

namespace understudy {
namespace cli {

int Fail(const absl::Status& status) {
  std::cerr << "understudy: " << status.message() << std::endl;
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kOutOfRange:
      return 1;
    default:
      return 3;
  }
}

absl::StatusOr<std::unique_ptr<store::Store>> OpenStore(const DbFlags& db, bool create) {
  store::StoreOptions options;
  options.path = db.db;
  options.reader_connections = 1;
  options.create_if_missing = create;
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(options);
  if (store.ok()) return store;
  std::string message(store.status().message());
  if (!absl::StrContains(message, db.db)) message = absl::StrCat(db.db, ": ", message);
  if (absl::IsUnavailable(store.status()) && ::access(db.db.c_str(), F_OK) != 0) {
    message = absl::StrCat("cannot open database ", db.db, ": no such file");
  }
  return absl::UnavailableError(message);
}

}  // namespace cli
}  // namespace understudy
