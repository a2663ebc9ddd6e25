// The A2A JSON-RPC codec (provider/a2a.h): any request either is read into
// a call or refused naming the field; its canonical request is a function
// of it and never holds the client's messageId; any answer text gives a
// text and a state without crashing; a recorded response put back for a
// new caller still parses and carries the caller's id; any card either is
// refused or points every interface at understudy.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "provider/a2a.h"
#include "provider/canonical.h"
#include "provider/jsonrpc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace understudy;
  namespace a2a = provider::a2a;
  namespace jsonrpc = provider::jsonrpc;
  const absl::string_view text = fuzz::View(data, size);

  // Every text is also an answer, a stream's answer and a card.
  (void)a2a::ResultText(text);
  (void)a2a::ResultState(text);
  absl::StatusOr<std::string> card = a2a::CardForUrl(text, "http://127.0.0.1:1/a2a/x");
  if (card.ok()) {
    FUZZ_CHECK(a2a::CardForUrl(*card, "http://127.0.0.1:1/a2a/x").ok(), "a served card is a card");
    FUZZ_CHECK(*a2a::CardForUrl(*card, "http://127.0.0.1:1/a2a/x") == *card,
               "pointing a card at understudy twice changes nothing more");
  }

  absl::StatusOr<jsonrpc::Message> message = jsonrpc::ParseMessage(text);
  if (!message.ok()) return 0;
  if (message->kind == jsonrpc::Message::Kind::kResponse) {
    const std::string rewritten =
        a2a::ForCaller(text, message->id, provider::Json("caller"), {{"m", "n"}});
    absl::StatusOr<jsonrpc::Message> again = jsonrpc::ParseMessage(rewritten);
    FUZZ_CHECK(again.ok(), "a response for a new caller still parses");
    FUZZ_CHECK(again->id == provider::Json("caller"), "the new id is the caller's");
    return 0;
  }
  absl::StatusOr<a2a::Call> call = a2a::ReadCall(*message);
  if (!call.ok()) {
    FUZZ_CHECK(absl::StartsWith(call.status().message(), "params"),
               "a refused request names the field");
    return 0;
  }
  const v1::CompletionRequest a = a2a::CanonicalRequest("agent", *message);
  const v1::CompletionRequest b = a2a::CanonicalRequest("agent", *message);
  FUZZ_CHECK(provider::CanonicalText(a) == provider::CanonicalText(b),
             "the canonical request is a function of the request");
  FUZZ_CHECK(a2a::IsA2aRequest(a) && provider::IsCallRequest(a), "it is an A2A call");
  absl::StatusOr<provider::Json> params = provider::ParseJson(a.extra(), "extra");
  FUZZ_CHECK(params.ok(), "the canonical params are JSON");
  if (params->is_object()) {
    const provider::Json* sent = provider::FindMember(*params, "message");
    FUZZ_CHECK(sent == nullptr || !sent->is_object() || !sent->contains("messageId"),
               "the client's messageId is dropped");
  }
  const a2a::Call back = a2a::CallOf(a);
  FUZZ_CHECK(back.method == call->method && back.version == call->version &&
                 back.text == call->text && back.context_id == call->context_id,
             "the canonical request keeps the method, the text and the ids");
  (void)a2a::ScriptedResult(*call, call->text, /*failed=*/true, "seed");
  return 0;
}
