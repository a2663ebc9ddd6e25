// Trace events as the store keeps them: compact, and referring to the
// recorded exchange they answered from instead of copying it.
//
// A replayed answer's `exchange` event carries the agent's request and the
// recorded answer (~1 KB), and a tool_call event repeats a tool call of that
// answer. Stored as they are, every replayed call wrote the recording again
// into the trace. Instead, an event may name the exchange (the session's row
// id and the exchange's seq: ExchangeRef) and list what readers derive from
// it (Derive bits): the request, the answer, and the attributes that are
// functions of them. Readers get the same event either way (Expand,
// ExpandedBytes); only the row is smaller.
//
// The derived attributes are computed here, by the same functions that build
// them when an event is not compact (AddRequestAttributes and the others),
// so a compact event and an inline one cannot disagree.
#ifndef UNDERSTUDY_STORE_TRACE_CODEC_H_
#define UNDERSTUDY_STORE_TRACE_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/map.h"
#include "trace/vocabulary.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace store {

namespace v1 = ::understudy::v1;

using AttributeMap = google::protobuf::Map<std::string, std::string>;

// What a reader derives instead of reading it from the row: bits of
// ExchangeRef::derive. The tool call's index (kDeriveToolCall) is
// derive >> kToolIndexShift.
enum Derive : uint32_t {
  // attributes["gen_ai.agent.name"] = the event's agent.
  kDeriveAgentName = 1u << 0,
  // request = the exchange's request (the agent sent those very bytes).
  kDeriveRequest = 1u << 1,
  // response = the exchange's response.
  kDeriveResponse = 1u << 2,
  // AddRequestAttributes of the exchange's request.
  kDeriveRequestAttributes = 1u << 3,
  // AddAnswerAttributes of the exchange (its response, error and seq).
  kDeriveAnswerAttributes = 1u << 4,
  // understudy.answer.source = "recording".
  kDeriveSourceRecording = 1u << 5,
  // understudy.streamed = "false" / "true".
  kDeriveNotStreamed = 1u << 6,
  kDeriveStreamed = 1u << 7,
  // AddToolCallAttributes of the response's tool call at the index.
  kDeriveToolCall = 1u << 8,
  // understudy.answer.repeat = "true" (a repeated answer, --repeat).
  kDeriveRepeat = 1u << 9,
};
inline constexpr int kToolIndexShift = 16;

// The exchange an event refers to; session_id 0: none.
struct ExchangeRef {
  int64_t session_id = 0;  // the store's row id of the session version
  int64_t seq = 0;         // the exchange's seq in it
  uint32_t derive = 0;     // Derive bits
};

// An event as queued for the store: the event without what ref.derive
// derives, and the name of its tool (gen_ai.tool.name, derived or not; ""
// for none), which the store indexes.
struct TraceRecord {
  v1::TraceEvent event;
  ExchangeRef ref;
  std::string tool;
};

// A record of an event that refers to nothing.
TraceRecord InlineRecord(v1::TraceEvent event);

// gen_ai.operation.name ("chat" when the request names none) and, when set,
// gen_ai.request.model.
void AddRequestAttributes(const v1::CompletionRequest& request, AttributeMap* attributes);
// What an exchange's answer says: error.type when `error_type` is not
// empty; understudy.exchange.seq when exchange_seq > 0; and from `response`
// (may be null) gen_ai.response.id, .model, .finish_reasons and the usage.
void AddAnswerAttributes(const v1::CompletionResponse* response, absl::string_view error_type,
                         int64_t exchange_seq, AttributeMap* attributes);
// gen_ai.tool.name, gen_ai.tool.call.id (when set), gen_ai.tool.call.arguments.
void AddToolCallAttributes(const v1::ToolCall& call, AttributeMap* attributes);
// The error.type of a recorded error: its status code's name; "" for none
// (code 0). Codes outside gRPC's (an MCP server's JSON-RPC codes) are
// UNKNOWN.
std::string ErrorTypeOf(const v1::ErrorStatus& error);

// The run context the engine puts on exchange and agent_execution events.
// The store keeps it in integer columns (TraceTable) instead of the body,
// where its keys and numbers as text took ~100 bytes of every replayed
// call's row (trace::attr::kIteration, kAgentIteration, kPreviousAgent).
struct ContextAttributes {
  std::optional<int64_t> iteration;
  std::optional<int64_t> agent_iteration;
  std::optional<std::string> previous_agent;
};
// Moves the context attributes out of `attributes`. An iteration stays
// where it is unless its text is exactly what absl::StrCat makes of the
// int64 it spells (so that it reads back byte for byte).
ContextAttributes TakeContextAttributes(AttributeMap* attributes);
// Appends the map entries (v1::TraceEvent.attributes) of what is set.
void AppendContextAttributes(std::optional<int64_t> iteration,
                             std::optional<int64_t> agent_iteration,
                             std::optional<absl::string_view> previous_agent, std::string* out);

// The full event of `record` (whose event has its run, seq, kind and agent
// set), given the exchange it refers to (null when it refers to none).
// False when the record needs an exchange it was not given, or names a tool
// call the answer does not have.
bool Expand(const TraceRecord& record, const v1::Exchange* exchange, v1::TraceEvent* out);

// An exchange as readers of compact rows use it: parsed once, and what
// rows derive from it serialized once (map entries of
// v1::TraceEvent.attributes, and the request and response fields' bytes).
struct ExchangeParts {
  v1::Exchange exchange;
  std::string request_bytes;
  std::string response_bytes;
  std::string request_attributes;               // AddRequestAttributes
  std::string answer_attributes;                // AddAnswerAttributes, seq = exchange.seq()
  std::vector<std::string> tool_call_attributes;  // AddToolCallAttributes, per call
};
void MakeExchangeParts(v1::Exchange exchange, ExchangeParts* out);

// The serialized full v1::TraceEvent of a stored row: `compact_body` (the
// event without run, seq, kind and agent and without what `derive`
// derives) followed by those fields, the derived attributes and the
// derived request and response, as protobuf's wire format allows (fields
// in any order; a message field given twice is merged, which never happens
// here since derived fields are absent from the body). `exchange` may be
// null when derive needs nothing from it. False in the cases Expand is.
bool ExpandedBytes(absl::string_view compact_body, absl::string_view run, int64_t seq,
                   absl::string_view kind, absl::string_view agent, uint32_t derive,
                   int64_t ref_seq, const ExchangeParts* exchange, std::string* out);

}  // namespace store
}  // namespace understudy

#endif  // UNDERSTUDY_STORE_TRACE_CODEC_H_
