// A model API as the HTTP listener speaks it: one Codec per API, and the
// registry that names them. The listener (service/http_api.h) knows no API
// by name: it asks the registry which codec serves a request's path, then
// asks that codec to read the route and the body, to decode the upstream's
// answer, to render an answer recorded over another API, and to shape
// errors. Adding an API is a codec in provider/ and one line in
// provider/codecs.cc (docs/development.md, "Adding a model API").
#ifndef UNDERSTUDY_PROVIDER_CODEC_H_
#define UNDERSTUDY_PROVIDER_CODEC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_field.h"
#include "provider/chunk_decoder.h"
#include "provider/element_stream.h"
#include "provider/parsed_request.h"
#include "provider/stream_render.h"
#include "understudy/v1/completion.pb.h"
#include "understudy/v1/understudy.pb.h"

namespace understudy {
namespace provider {

// What a request's route says besides its body, as the codec serving it
// read it (Codec::Route).
struct CallRoute {
  // The path, normalized (Registry::NormalizePath), without the query.
  std::string path;
  // What follows '?', "" when none.
  std::string query;
  // A generation (POST, a body to answer), the fetch of something the
  // API's server keeps (GET, `resource_id`; Codec::stored()), or the list
  // of the run's models in this API's shape (GET; Codec::ModelList), as
  // GET /v1/models is for every API.
  enum class Kind { kGenerate, kFetch, kListModels };
  Kind kind = Kind::kGenerate;
  // kFetch: the id in the path ("" when the path has none).
  std::string resource_id;
  // A model the path names ("" when the body names it).
  std::string model;
  // The stream the route asks for, whatever the body says: kNone when the
  // route does not choose.
  StreamFraming framing = StreamFraming::kNone;
};

// What a rendered answer needs besides the canonical answer.
struct RenderContext {
  // `created` of the recording (0 for scripted answers), for the shapes
  // that carry one.
  int64_t created = 0;
  // For an API with stored responses: the response id to render.
  std::string response_id;
  // The request being answered (the API renders from its inputs or names
  // its model), or null.
  const ParsedRequest* parsed = nullptr;
  const CallRoute* call = nullptr;
  // What a whole recorded body of the same API said, for a stream rendered
  // from it ("" when none).
  std::string recorded_body;
};

// The model of a rendered answer: the answer's, else the route's, else the
// request's, else "".
std::string ModelFor(const RenderContext& context, const v1::CompletionResponse& response);

// The value of query parameter `name` in `query` (what follows '?'), ""
// when absent. Values are returned as sent, not percent-decoded: the
// parameters the codecs read (alt, api-version) need none.
absl::string_view QueryParam(absl::string_view query, absl::string_view name);

// The stream form a recorded native exchange has: true for SSE.
bool IsEventStream(absl::string_view content_type);

// What an API whose server keeps its answers offers besides generation: a
// request may continue a response by id and refer to its items, and a
// client may fetch it (OpenAI Responses). Thread-safe.
class StoredResponses {
 public:
  virtual ~StoredResponses() = default;
  // The fetch route, as error messages name it ("/v1/responses/{id}").
  virtual absl::string_view fetch_route() const = 0;
  // True for an id this API would issue (a recorded answer's own id is
  // kept when it is one).
  virtual bool IsOwnId(absl::string_view id) const = 0;
  // The id the caller gets for `exchange` answering `request`: the recorded
  // one when it is the API's own, otherwise one derived from the request's
  // canonical text and the answer (same conversation, same id, in every
  // process).
  virtual std::string IdFor(const v1::CompletionRequest& request,
                            const v1::Exchange& exchange) const = 0;
  // The id in a response object, "" when none.
  virtual std::string IdOf(absl::string_view object) const = 0;
  // The response object of a recorded native answer (its body, or what its
  // last stream event carries), "" when there is none.
  virtual std::string RecordedObject(const v1::NativeExchange& native) const = 0;
  // The items of a response object: each item's id and the message it
  // stands for.
  virtual std::vector<std::pair<std::string, v1::Message>> OutputItems(
      absl::string_view object) const = 0;
};

// One model API. Implementations are immutable and thread-safe; the
// registry owns them for the life of the process.
class Codec {
 public:
  virtual ~Codec() = default;

  // --- Names ---
  // The registry's name of the API and NativeExchange.provider of what is
  // recorded over it ("openai", "anthropic", ...): a recording replays byte
  // for byte only to a caller of the same API.
  virtual absl::string_view name() const = 0;
  // The `--upstream NAME=URL` name record and passthrough forward to.
  // Several APIs of one vendor share one.
  virtual absl::string_view upstream() const = 0;
  // The trace attributes of a call over this API (engine::CallInfo::
  // attributes), none by default.
  virtual std::vector<std::pair<std::string, std::string>> CallAttributes() const;
  // The request fields this API's matching never looks at (they never
  // change the answer); serve's help lists them.
  virtual absl::Span<const absl::string_view> IgnoredRequestFields() const = 0;
  // The environment variable its SDKs read their base URL from, with what
  // follows a run's prefix (http://HOST:PORT/run/ID) in it: `understudy
  // record|replay -- CMD` sets it. {"", ""} when its SDKs read none.
  virtual std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const;

  // The AWS service its upstream's requests are signed for when forwarded
  // (SigV4, "bedrock"): the SDK signed them for understudy's address, so
  // record and passthrough sign them again (upstream/aws_sigv4.h). ""
  // (the default) for an API whose key travels as sent.
  virtual absl::string_view aws_signing_name() const;

  // --- Routes ---
  // The routes it serves as a 404 lists them ("POST /v1/messages", ...).
  virtual std::vector<std::string> routes() const = 0;
  // `path` (no query) under the name this API records and forwards it by,
  // for a path an SDK spells another way; the path itself otherwise.
  virtual std::string NormalizePath(absl::string_view path) const;
  // True when `path` (normalized, no query) is one of its routes.
  virtual bool Serves(absl::string_view path) const = 0;
  // True when this API claims a request whose path another API's routes
  // serve, by what the query says (Azure OpenAI's `api-version` on
  // /v1/responses). Claims are asked before Serves. Default: never.
  virtual bool Claims(absl::string_view path, absl::string_view query) const;
  // What a served path and its query say (`method` names the request in
  // errors): the route's model, stream form or fetched id. Fails
  // (NOT_FOUND, INVALID_ARGUMENT) for a path of this API that names no call
  // it serves. The default: a generation.
  virtual absl::StatusOr<CallRoute> Route(absl::string_view method, absl::string_view path,
                                           absl::string_view query) const;
  // The path a forwarded request is sent to (with the query the upstream
  // must see), and the path it is recorded under (never a credential).
  // Both default to the route's path.
  virtual std::string ForwardPath(const CallRoute& call) const;
  virtual std::string RecordedPath(const CallRoute& call) const;
  // A request header only this API's clients send, naming the API when the
  // path does not ("" for none): GET /v1/models and unknown routes answer
  // in the shape of the API whose header a request carries.
  virtual absl::string_view client_header() const;
  // True for a response header that is recorded and replayed for this API
  // (rate-limit state, processing time) besides the common ones.
  virtual bool ReplaysHeader(absl::string_view name) const;

  // True when a request body sent with `content_type` (lower case, "" when
  // absent) is read as this API's JSON; others are refused with 415.
  // Default: application/json only.
  virtual bool AcceptsContentType(absl::string_view content_type) const;

  // --- Requests and answers ---
  // The body translated; what the route says (a model, a stream form)
  // completes it.
  virtual absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute& call,
                                                     absl::string_view body) const = 0;
  // An upstream's whole (not streamed) answer translated.
  virtual absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const = 0;
  // A decoder for one streamed answer.
  virtual std::unique_ptr<ChunkDecoder> NewDecoder() const = 0;
  // `response` as a whole body in this API's shape.
  virtual absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                                 const RenderContext& context) const = 0;
  // `chunks` as a stream in this API's shape, one event at a time; each
  // event that carries a chunk names it. `chunks` must outlive the
  // renderer; what it needs of `context` is copied. UNIMPLEMENTED for an
  // API that never streams.
  virtual absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext& context) const = 0;
  // True when a recording whose content type is `recorded_content_type`
  // has the form `call` asks for, so that its bytes replay as they are.
  // Default: always (the body alone says whether to stream).
  virtual bool SameForm(const CallRoute& call, absl::string_view recorded_content_type) const;
  // The content type of a stream rendered for `call` (default SSE).
  virtual std::string StreamContentType(const CallRoute& call) const;
  // The models of a run, listed in this API's shape (GET /v1/models);
  // UNIMPLEMENTED for an API that has no list of its own.
  virtual absl::StatusOr<std::string> ModelList(const std::vector<std::string>& models) const;
  // Stored responses, or null for an API whose server keeps nothing.
  virtual const StoredResponses* stored() const;

  // --- Errors ---
  // An error body in this API's shape; `code` is understudy's stable code
  // ("" for none; a shape may have no place for it).
  virtual std::string ErrorBody(const absl::Status& status, absl::string_view code) const = 0;
  // The message an upstream's error body in this API's shape carries, ""
  // when it holds none. Default: `error.message`, also inside a
  // one-element array (Gemini's array form).
  virtual std::string UpstreamErrorMessage(absl::string_view body) const;
  // The body of the listener's own refusal (413, 400) of a request for
  // this API, before it was read. Default: ErrorBody of the status the
  // HTTP status stands for, with no code.
  virtual std::string RequestErrorBody(int http_status, absl::string_view message) const;
};

// The model APIs by name. Built once; immutable and thread-safe after.
class CodecRegistry {
 public:
  // The APIs understudy speaks, registered in provider/codecs.cc.
  static const CodecRegistry& Builtin();

  // Adds `codec`; the first added is the default.
  void Register(std::unique_ptr<Codec> codec);

  // The codec named `name` (Codec::name), or null.
  const Codec* Find(absl::string_view name) const;
  // The codec that claims `path` (normalized, no query) by `query`, else
  // the one whose routes serve it, or null.
  const Codec* ForPath(absl::string_view path, absl::string_view query = "") const;
  // The codec whose client header `header` finds (a request's header by
  // name, "" when absent), else the default.
  const Codec& ForClient(const std::function<absl::string_view(absl::string_view)>& header) const;
  // The one a request no route names is answered in the shape of, absent
  // a client header: the first registered.
  const Codec& Default() const;
  // `path` with every codec's NormalizePath applied.
  std::string NormalizePath(absl::string_view path) const;
  // True for a response header recorded and replayed: the common ones
  // (request ids, retry hints) and those a codec replays.
  bool ReplaysHeader(absl::string_view name) const;
  // The distinct upstream names, in registration order.
  std::vector<std::string> UpstreamNames() const;
  // Every route of every codec, in registration order.
  std::vector<std::string> Routes() const;
  // Every codec, in registration order.
  std::vector<const Codec*> All() const;
  // The distinct base URL variables (Codec::BaseUrlVariable), in
  // registration order.
  std::vector<std::pair<std::string, std::string>> BaseUrlVariables() const;

 private:
  std::vector<std::unique_ptr<Codec>> codecs_;
};

}  // namespace provider
}  // namespace understudy

#endif  // UNDERSTUDY_PROVIDER_CODEC_H_
