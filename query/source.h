// Where the trace-reading core (query/) reads from: the store, and the
// engine when there is one.
//
// The engine is only asked for run records: an active run's record in the
// store lags (its counts and state are the engine's), so a server passes
// its engine; a command that opens a database on its own (the CLI, testgen)
// passes none and reads the stored records.
#ifndef UNDERSTUDY_QUERY_SOURCE_H_
#define UNDERSTUDY_QUERY_SOURCE_H_

#include "engine/engine.h"
#include "store/store.h"

namespace understudy {
namespace query {

struct Source {
  // Required by every read (GetRun alone, given an engine, needs none). Not
  // owned; must outlive every call given this Source.
  store::Store* store = nullptr;
  // Optional (null: the stored run records only). Not owned; must outlive
  // every call given this Source.
  engine::Engine* engine = nullptr;
};

// The most events one page of a query holds (and a store read at a time).
inline constexpr int kMaxPage = 10000;

}  // namespace query
}  // namespace understudy

#endif  // UNDERSTUDY_QUERY_SOURCE_H_
