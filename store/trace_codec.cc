#include "store/trace_codec.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "trace/vocabulary.h"

namespace understudy {
namespace store {
namespace {

// Field numbers of v1::TraceEvent's request and response.
constexpr int kRequestField = 7;
constexpr int kResponseField = 8;

// Adds what `derive` derives to `attributes`. False when it needs an
// exchange and has none, or a tool call the answer does not have.
bool AddDerived(uint32_t derive, absl::string_view agent, int64_t ref_seq,
                const v1::Exchange* exchange, AttributeMap* attributes) {
  if ((derive & kDeriveAgentName) && !agent.empty()) {
    (*attributes)[trace::attr::kGenAiAgentName] = std::string(agent);
  }
  if (derive & kDeriveSourceRecording) (*attributes)[trace::attr::kAnswerSource] = "recording";
  if (derive & kDeriveNotStreamed) (*attributes)[trace::attr::kStreamed] = "false";
  if (derive & kDeriveStreamed) (*attributes)[trace::attr::kStreamed] = "true";
  if (derive & kDeriveRepeat) (*attributes)[trace::attr::kAnswerRepeat] = "true";
  const uint32_t needs_exchange = kDeriveRequest | kDeriveResponse | kDeriveRequestAttributes |
                                  kDeriveAnswerAttributes | kDeriveToolCall;
  if ((derive & needs_exchange) == 0) return true;
  if (exchange == nullptr) return false;
  if (derive & kDeriveRequestAttributes) AddRequestAttributes(exchange->request(), attributes);
  if (derive & kDeriveAnswerAttributes) {
    AddAnswerAttributes(&exchange->response(),
                        exchange->has_error() ? ErrorTypeOf(exchange->error()) : std::string(),
                        ref_seq, attributes);
  }
  if (derive & kDeriveToolCall) {
    const uint32_t i = derive >> kToolIndexShift;
    const auto& calls = exchange->response().message().tool_calls();
    if (i >= static_cast<uint32_t>(calls.size())) return false;
    AddToolCallAttributes(calls[static_cast<int>(i)], attributes);
  }
  return true;
}

void AppendLengthDelimited(int field, absl::string_view bytes, std::string* out) {
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(static_cast<uint32_t>(field << 3 | 2));
  coded.WriteVarint32(static_cast<uint32_t>(bytes.size()));
  if (!bytes.empty()) coded.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
}

// The serialized attributes field (map entries) of `attributes`.
std::string EntriesOf(const AttributeMap& attributes) {
  v1::TraceEvent holder;
  *holder.mutable_attributes() = attributes;
  return holder.SerializeAsString();
}

// One map entry of v1::TraceEvent.attributes, serialized.
std::string EntryOf(absl::string_view key, absl::string_view value) {
  AttributeMap one;
  one[std::string(key)] = std::string(value);
  return EntriesOf(one);
}

// Appends one map entry of v1::TraceEvent.attributes (field 6: a message
// of key = 1, value = 2), as EntryOf serializes it, without building a map.
void AppendEntry(absl::string_view key, absl::string_view value, std::string* out) {
  using google::protobuf::io::CodedOutputStream;
  const size_t key_size = 1 + CodedOutputStream::VarintSize32(static_cast<uint32_t>(key.size())) +
                          key.size();
  const size_t value_size =
      1 + CodedOutputStream::VarintSize32(static_cast<uint32_t>(value.size())) + value.size();
  google::protobuf::io::StringOutputStream stream(out);
  CodedOutputStream coded(&stream);
  coded.WriteTag(6 << 3 | 2);
  coded.WriteVarint32(static_cast<uint32_t>(key_size + value_size));
  // An empty view may have no data at all (a name number 0 reads back as
  // absl::string_view()): WriteRaw would pass memcpy a null pointer.
  auto bytes = [&coded](int field, absl::string_view text) {
    coded.WriteTag(static_cast<uint32_t>(field << 3 | 2));
    coded.WriteVarint32(static_cast<uint32_t>(text.size()));
    if (!text.empty()) coded.WriteRaw(text.data(), static_cast<int>(text.size()));
  };
  bytes(1, key);
  bytes(2, value);
}

// The serialized header fields (run, seq, kind, agent) of an event.
void AppendHeader(absl::string_view run, int64_t seq, absl::string_view kind,
                  absl::string_view agent, std::string* out) {
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  auto string_field = [&](int field, absl::string_view value) {
    if (value.empty()) return;
    coded.WriteTag(static_cast<uint32_t>(field << 3 | 2));
    coded.WriteVarint32(static_cast<uint32_t>(value.size()));
    coded.WriteRaw(value.data(), static_cast<int>(value.size()));
  };
  string_field(1, run);
  if (seq != 0) {
    coded.WriteTag(2 << 3);
    coded.WriteVarint64(static_cast<uint64_t>(seq));
  }
  string_field(3, kind);
  string_field(4, agent);
}

}  // namespace

TraceRecord InlineRecord(v1::TraceEvent event) {
  TraceRecord record;
  auto tool = event.attributes().find(trace::attr::kGenAiToolName);
  if (tool != event.attributes().end()) record.tool = tool->second;
  record.event = std::move(event);
  return record;
}

void AddRequestAttributes(const v1::CompletionRequest& request, AttributeMap* attributes) {
  (*attributes)[trace::attr::kGenAiOperationName] =
      request.operation().empty() ? "chat" : request.operation();
  if (!request.model().empty()) (*attributes)[trace::attr::kGenAiRequestModel] = request.model();
}

void AddAnswerAttributes(const v1::CompletionResponse* response, absl::string_view error_type,
                         int64_t exchange_seq, AttributeMap* attributes) {
  AttributeMap& attrs = *attributes;
  if (exchange_seq > 0) attrs[trace::attr::kExchangeSeq] = absl::StrCat(exchange_seq);
  if (!error_type.empty()) attrs[trace::attr::kErrorType] = std::string(error_type);
  if (response == nullptr) return;
  if (!response->id().empty()) attrs[trace::attr::kGenAiResponseId] = response->id();
  if (!response->model().empty()) attrs[trace::attr::kGenAiResponseModel] = response->model();
  if (!response->finish_reason().empty()) {
    attrs[trace::attr::kGenAiResponseFinishReasons] = response->finish_reason();
  }
  if (response->has_usage()) {
    attrs[trace::attr::kGenAiUsageInputTokens] = absl::StrCat(response->usage().input_tokens());
    attrs[trace::attr::kGenAiUsageOutputTokens] = absl::StrCat(response->usage().output_tokens());
  }
}

void AddToolCallAttributes(const v1::ToolCall& call, AttributeMap* attributes) {
  (*attributes)[trace::attr::kGenAiToolName] = call.name();
  if (!call.id().empty()) (*attributes)[trace::attr::kGenAiToolCallId] = call.id();
  (*attributes)[trace::attr::kGenAiToolCallArguments] = call.arguments();
}

std::string ErrorTypeOf(const v1::ErrorStatus& error) {
  if (error.code() == 0) return "";
  if (error.code() < 0 || error.code() > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCodeToString(absl::StatusCode::kUnknown);
  }
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(error.code()));
}

ContextAttributes TakeContextAttributes(AttributeMap* attributes) {
  ContextAttributes context;
  auto take_int = [attributes](const char* key, std::optional<int64_t>* out) {
    auto it = attributes->find(key);
    int64_t value = 0;
    if (it == attributes->end() || !absl::SimpleAtoi(it->second, &value) ||
        absl::StrCat(value) != it->second) {
      return;
    }
    *out = value;
    attributes->erase(it);
  };
  take_int(trace::attr::kIteration, &context.iteration);
  take_int(trace::attr::kAgentIteration, &context.agent_iteration);
  auto previous = attributes->find(trace::attr::kPreviousAgent);
  if (previous != attributes->end()) {
    context.previous_agent = std::move(previous->second);
    attributes->erase(previous);
  }
  return context;
}

void AppendContextAttributes(std::optional<int64_t> iteration,
                             std::optional<int64_t> agent_iteration,
                             std::optional<absl::string_view> previous_agent, std::string* out) {
  if (iteration.has_value()) AppendEntry(trace::attr::kIteration, absl::StrCat(*iteration), out);
  if (agent_iteration.has_value()) {
    AppendEntry(trace::attr::kAgentIteration, absl::StrCat(*agent_iteration), out);
  }
  if (previous_agent.has_value()) AppendEntry(trace::attr::kPreviousAgent, *previous_agent, out);
}

bool Expand(const TraceRecord& record, const v1::Exchange* exchange, v1::TraceEvent* out) {
  *out = record.event;
  const uint32_t derive = record.ref.derive;
  if (!AddDerived(derive, out->agent(), record.ref.seq, exchange, out->mutable_attributes())) {
    return false;
  }
  if (derive & kDeriveRequest) *out->mutable_request() = exchange->request();
  if (derive & kDeriveResponse) *out->mutable_response() = exchange->response();
  return true;
}

void MakeExchangeParts(v1::Exchange exchange, ExchangeParts* out) {
  out->exchange = std::move(exchange);
  const v1::Exchange& ex = out->exchange;
  out->request_bytes = ex.request().SerializeAsString();
  out->response_bytes = ex.response().SerializeAsString();
  AttributeMap attributes;
  AddRequestAttributes(ex.request(), &attributes);
  out->request_attributes = EntriesOf(attributes);
  attributes.clear();
  AddAnswerAttributes(&ex.response(), ex.has_error() ? ErrorTypeOf(ex.error()) : std::string(),
                      ex.seq(), &attributes);
  out->answer_attributes = EntriesOf(attributes);
  out->tool_call_attributes.clear();
  for (const v1::ToolCall& call : ex.response().message().tool_calls()) {
    attributes.clear();
    AddToolCallAttributes(call, &attributes);
    out->tool_call_attributes.push_back(EntriesOf(attributes));
  }
}

bool ExpandedBytes(absl::string_view compact_body, absl::string_view run, int64_t seq,
                   absl::string_view kind, absl::string_view agent, uint32_t derive,
                   int64_t ref_seq, const ExchangeParts* exchange, std::string* out) {
  // What AddDerived adds, from entries serialized once (the exchange's in
  // ExchangeParts, the constant ones here); AddDerived stays the definition
  // (trace_table_test compares the two).
  static const std::string* const recording = new std::string(
      EntryOf(trace::attr::kAnswerSource, "recording"));
  static const std::string* const not_streamed =
      new std::string(EntryOf(trace::attr::kStreamed, "false"));
  static const std::string* const streamed =
      new std::string(EntryOf(trace::attr::kStreamed, "true"));
  static const std::string* const repeat =
      new std::string(EntryOf(trace::attr::kAnswerRepeat, "true"));
  const uint32_t needs_exchange = kDeriveRequest | kDeriveResponse | kDeriveRequestAttributes |
                                  kDeriveAnswerAttributes | kDeriveToolCall;
  if ((derive & needs_exchange) != 0 &&
      (exchange == nullptr || exchange->exchange.seq() != ref_seq)) {
    return false;
  }
  out->assign(compact_body.data(), compact_body.size());
  AppendHeader(run, seq, kind, agent, out);
  if ((derive & kDeriveAgentName) && !agent.empty()) {
    AppendEntry(trace::attr::kGenAiAgentName, agent, out);
  }
  if (derive & kDeriveSourceRecording) out->append(*recording);
  if (derive & kDeriveNotStreamed) out->append(*not_streamed);
  if (derive & kDeriveStreamed) out->append(*streamed);
  if (derive & kDeriveRepeat) out->append(*repeat);
  if (derive & kDeriveRequestAttributes) out->append(exchange->request_attributes);
  if (derive & kDeriveAnswerAttributes) out->append(exchange->answer_attributes);
  if (derive & kDeriveToolCall) {
    const uint32_t i = derive >> kToolIndexShift;
    if (i >= exchange->tool_call_attributes.size()) return false;
    out->append(exchange->tool_call_attributes[i]);
  }
  if (derive & kDeriveRequest) AppendLengthDelimited(kRequestField, exchange->request_bytes, out);
  if (derive & kDeriveResponse) {
    AppendLengthDelimited(kResponseField, exchange->response_bytes, out);
  }
  return true;
}

}  // namespace store
}  // namespace understudy
