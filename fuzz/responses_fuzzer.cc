// The OpenAI Responses codec both ways (provider/responses.h): request and
// response bodies (and the output items a reference reads as), stream
// events; what parses renders, a rendered response parses back to the same
// canonical answer, and rendered streams are whole SSE events numbered 0,
// 1, 2, ...
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/stream_util.h"
#include "provider/canonical.h"
#include "provider/responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace responses = provider::responses;
  const absl::string_view body = fuzz::View(data, size);

  absl::StatusOr<provider::ParsedRequest> request = responses::ParseRequest(body);
  if (request.ok()) {
    absl::StatusOr<provider::ParsedRequest> again = responses::ParseRequest(body);
    FUZZ_CHECK(again.ok(), "parsing is deterministic");
    const std::string canonical = provider::CanonicalText(request->canonical);
    FUZZ_CHECK(canonical == provider::CanonicalText(again->canonical) &&
                   request->previous_response_id == again->previous_response_id &&
                   request->stream == again->stream,
               "the canonical request is a function of the body");
    FUZZ_CHECK(request->include_usage == request->stream, "Responses streams report usage");
    int previous = -1;
    for (const provider::ParsedRequest::ItemReference& ref : request->item_references) {
      FUZZ_CHECK(ref.message > previous && ref.message < request->canonical.messages_size(),
                 "each reference points at its own message, in order");
      previous = ref.message;
    }
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(request.status()), "a bad body is INVALID_ARGUMENT");
  }

  responses::RenderMeta meta;
  meta.created_at = 1;
  meta.model = "m";
  absl::StatusOr<v1::CompletionResponse> response = responses::ParseResponse(body);
  if (response.ok()) {
    const std::string rendered = responses::RenderResponse(*response, meta);
    absl::StatusOr<v1::CompletionResponse> again = responses::ParseResponse(rendered);
    FUZZ_CHECK(again.ok(), "a rendered response parses");
    FUZZ_CHECK(responses::RenderResponse(*again, meta) == rendered, "rendering is stable");
    FUZZ_CHECK(again->message().content() == response->message().content() &&
                   again->message().tool_calls_size() == response->message().tool_calls_size(),
               "rendering keeps the answer");
    FUZZ_CHECK(!responses::ResponseIdOf(rendered).empty(), "a rendered response has an id");
  } else {
    FUZZ_CHECK(absl::IsInvalidArgument(response.status()), "a bad response is INVALID_ARGUMENT");
  }
  // The output items, as a reference to one reads: each a message with a
  // role, the same every time.
  const auto items = responses::OutputItems(body);
  const auto items_again = responses::OutputItems(body);
  FUZZ_CHECK(items.size() == items_again.size(), "reading items is deterministic");
  for (size_t i = 0; i < items.size(); ++i) {
    FUZZ_CHECK(items[i].first == items_again[i].first &&
                   items[i].second.SerializeAsString() == items_again[i].second.SerializeAsString(),
               "reading items is deterministic");
    FUZZ_CHECK(!items[i].second.role().empty(), "an item reads as a message with a role");
  }
  (void)responses::ResponseIdOf(body);
  (void)responses::ResponseObjectFromEvent(body);

  // The same bytes as a stream.
  const google::protobuf::RepeatedPtrField<v1::CompletionChunk> chunks =
      fuzz::DecodeStream<responses::StreamDecoder>(body);
  const std::vector<provider::RenderedEvent> events = responses::RenderStream(chunks, meta);
  FUZZ_CHECK(events.size() >= 3, "a stream is at least created, in_progress, completed");
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string& e = events[i].text;
    FUZZ_CHECK(absl::StartsWith(e, "event: ") && absl::EndsWith(e, "\n\n"),
               "rendered events are whole SSE events");
    FUZZ_CHECK(e.find("\n\n") == e.size() - 2, "one event per element");
    FUZZ_CHECK(absl::StrContains(e, absl::StrCat("\"sequence_number\":", i, ",")),
               "events are numbered in order");
    FUZZ_CHECK(events[i].chunk >= -1 && events[i].chunk < chunks.size(),
               "delta events point at a chunk");
  }
  FUZZ_CHECK(!responses::ResponseObjectFromEvent(
                  events.back().text.substr(events.back().text.find("\ndata: ") + 7))
                  .empty(),
             "the last event carries the response");
  return 0;
}
