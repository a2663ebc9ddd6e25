// Event filters: which trace events a query, a wait or an assertion is about.
//
//   v1::EventFilter f;
//   f.add_kinds("tool_call");
//   f.set_agent("executor");
//   (*f.mutable_attribute_patterns())["gen_ai.tool.call.arguments"] = "verification";
//   absl::StatusOr<EventFilter> filter = EventFilter::Create(f, "filter");
//   if (!filter.ok()) return filter.status();  // names the bad field
//   for (const v1::TraceEvent& e : events) {
//     if (filter->Matches(e)) ...
//   }
//
// Every condition that is set must hold (see v1::EventFilter). Patterns are
// RE2 (linear time, safe on hostile input), compiled once by Create.
#ifndef UNDERSTUDY_TRACE_FILTER_H_
#define UNDERSTUDY_TRACE_FILTER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace trace {

// A compiled v1::EventFilter. Immutable once created, so one object may be
// used from any number of threads; cheap to copy (compiled patterns are
// shared).
class EventFilter {
 public:
  // Compiles `filter`. `where` is the filter's path for messages ("filter",
  // "count.filter"; "" for none). INVALID_ARGUMENT naming the field when a
  // pattern does not compile
  // (`filter.attribute_patterns["gen_ai.tool.name"]: invalid RE2 pattern: ...`),
  // a kind is empty, or the seq bounds are negative or min_seq > max_seq.
  static absl::StatusOr<EventFilter> Create(const v1::EventFilter& filter, absl::string_view where);

  // True when `event` satisfies every condition that is set:
  //   kinds              event.kind() is one of them
  //   agent              event.agent() or its gen_ai.agent.name attribute
  //   tool               the gen_ai.tool.name attribute
  //   phase              the understudy.phase attribute
  //   attributes         each attribute present and equal
  //   attribute_patterns each attribute present and containing a match (RE2
  //                      partial match); a missing attribute never matches
  //   min_seq, max_seq   inclusive bounds; 0 leaves that side open
  bool Matches(const v1::TraceEvent& event) const;

  // The conditions as one line, for explanations:
  // `kind=tool_call agent=executor tool=continue`, `kind=exchange|miss`,
  // `gen_ai.tool.call.arguments~/verification/`, `seq=3..9`; values with
  // spaces are quoted. "any event" for an empty filter.
  std::string Describe() const;

  // The filter as given to Create.
  const v1::EventFilter& proto() const { return proto_; }

 private:
  EventFilter() = default;

  v1::EventFilter proto_;
  // attribute name -> compiled pattern, sorted by name; never null.
  std::vector<std::pair<std::string, std::shared_ptr<const RE2>>> patterns_;
};

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_FILTER_H_
