#include "cli/sessions.h"

#include <fstream>
#include <iostream>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/files.h"
#include "engine/engine.h"
#include "nlohmann/json.hpp"
#include "provider/canonical.h"
#include "trace/proto_json.h"

namespace understudy {
namespace cli {
namespace {

using trace::ToJson;

const char* StateName(v1::SessionState s) {
  return s == v1::SESSION_STATE_OPEN ? "open" : s == v1::SESSION_STATE_CLOSED ? "closed" : "?";
}

std::string Quote(const std::string& s, size_t max = 60) {
  std::string cut = s.size() > max ? s.substr(0, max) + "…" : s;
  return nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace


int SessionsList(const DbFlags& db, const std::string& prefix) {
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto sessions = (*store)->ListSessions(prefix);
  if (!sessions.ok()) return Fail(sessions.status());
  if (db.json) {
    for (const v1::Session& s : *sessions) std::cout << ToJson(s) << "\n";
    return 0;
  }
  if (sessions->empty()) {
    std::cerr << "no sessions in " << db.db << "\n";
    return 0;
  }
  std::printf("%-32s %7s %-7s %9s  %s\n", "NAME", "VERSION", "STATE", "EXCHANGES", "AGENTS");
  for (const v1::Session& s : *sessions) {
    std::printf("%-32s %7lld %-7s %9lld  %s\n", s.name().c_str(),
                static_cast<long long>(s.version()), StateName(s.state()),
                static_cast<long long>(s.exchange_count()),
                absl::StrJoin(s.agents(), ",").c_str());
  }
  return 0;
}

int SessionsShow(const DbFlags& db, const std::string& ref) {
  auto parsed = engine::ParseSessionRef(ref);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto session = (*store)->GetSession(parsed->first, parsed->second);
  if (!session.ok()) return Fail(session.status());
  auto exchanges = (*store)->LoadExchanges(session->name(), session->version());
  if (!exchanges.ok()) return Fail(exchanges.status());
  if (db.json) {
    std::cout << ToJson(*session) << "\n";
    for (const v1::Exchange& e : *exchanges) std::cout << ToJson(e) << "\n";
    return 0;
  }
  std::cout << session->name() << "@" << session->version() << "  " << StateName(session->state())
            << "  " << session->exchange_count() << " exchanges  agents: "
            << absl::StrJoin(session->agents(), ", ") << "\n";
  for (const v1::Exchange& e : *exchanges) {
    const auto& messages = e.request().messages();
    std::string last = messages.empty() ? "" : messages[messages.size() - 1].content();
    // An MCP or A2A request: its method, and its params for what was asked.
    const bool call = provider::IsCallRequest(e.request());
    if (call) last = e.request().extra();
    std::cout << "#" << e.seq() << " " << (e.agent().empty() ? "-" : e.agent()) << "  "
              << e.request().model() << (call ? " " + e.request().operation() : "") << "  "
              << Quote(last) << " → ";
    if (e.has_error() && call) {
      std::cout << "JSON-RPC error " << e.error().code() << " " << Quote(e.error().message());
    } else if (e.has_error()) {
      std::cout << "error " << absl::StatusCodeToString(static_cast<absl::StatusCode>(e.error().code()));
    } else {
      std::cout << Quote(e.response().message().content());
      for (const v1::ToolCall& c : e.response().message().tool_calls()) {
        std::cout << " " << c.name() << Quote(c.arguments(), 40);
      }
      if (!e.response().finish_reason().empty()) std::cout << " (" << e.response().finish_reason() << ")";
    }
    if (e.streamed()) std::cout << " [" << e.chunks_size() << " chunks]";
    std::cout << "\n";
  }
  return 0;
}

int SessionsRemove(const DbFlags& db, const std::string& ref) {
  auto parsed = engine::ParseSessionRef(ref);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto n = (*store)->DeleteSession(parsed->first, parsed->second);
  if (!n.ok()) return Fail(n.status());
  std::cerr << "deleted " << *n << (*n == 1 ? " version" : " versions") << " of "
            << parsed->first << "\n";
  return 0;
}

int Export(const DbFlags& db, const std::string& ref, const std::string& output) {
  auto parsed = engine::ParseSessionRef(ref);
  if (!parsed.ok()) return Fail(parsed.status());
  auto store = OpenStore(db);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto jsonl = (*store)->ExportSession(parsed->first, parsed->second);
  if (!jsonl.ok()) return Fail(jsonl.status());
  if (output.empty() || output == "-") {
    std::cout.write(jsonl->data(), static_cast<std::streamsize>(jsonl->size()));
    std::cout.flush();
    return std::cout ? 0 : 3;
  }
  absl::Status s = WriteFileAtomically(output, *jsonl);
  return s.ok() ? 0 : Fail(s);
}

int Import(const DbFlags& db, const std::string& input, const std::string& name) {
  std::string content;
  if (input == "-") {
    content.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(input, std::ios::binary);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("cannot read ", input)));
    content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto store = OpenStore(db, /*create=*/true);
  if (!store.ok()) return Fail(store.status());  // UNAVAILABLE: exit 3
  auto session = (*store)->ImportSession(content, name);
  if (!session.ok()) {
    return Fail(absl::Status(session.status().code(),
                             absl::StrCat(input, ": ", session.status().message())));
  }
  std::cout << session->name() << "@" << session->version() << " imported: "
            << session->exchange_count() << " exchanges\n";
  return 0;
}

}  // namespace cli
}  // namespace understudy
