// JsonSubset moved to validation/json_subset.h, below both of its users (the
// trace assertions here and scenario rules' `when.tool_arguments`); this
// header keeps the trace's own spelling, trace::JsonSubset, for its callers.
#ifndef UNDERSTUDY_TRACE_JSON_SUBSET_H_
#define UNDERSTUDY_TRACE_JSON_SUBSET_H_

#include "validation/json_subset.h"

namespace understudy {
namespace trace {

using validation::JsonSubset;

}  // namespace trace
}  // namespace understudy

#endif  // UNDERSTUDY_TRACE_JSON_SUBSET_H_
