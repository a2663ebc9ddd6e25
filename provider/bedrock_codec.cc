// The Bedrock Runtime codecs (provider/codec.h): Converse and InvokeModel,
// both under /model/{modelId}/{operation}. The model id is percent-encoded
// in the path as the AWS SDKs send it ("anthropic.claude-3-5-sonnet-
// 20240620-v1%3A0", or an ARN with its '/' as %2F): the canonical model is
// the decoded id, and the path is recorded and forwarded as sent (SigV4
// signs it so).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/http_status.h"
#include "provider/anthropic.h"
#include "provider/bedrock.h"
#include "validation/utf8.h"

namespace understudy {
namespace provider {
namespace bedrock {
namespace {

// One Bedrock API: its registry name and the operations of its routes.
struct Api {
  absl::string_view name;
  absl::string_view whole;   // answers with a JSON body
  absl::string_view stream;  // answers with an event stream
};

constexpr Api kConverse = {"bedrock", "converse", "converse-stream"};
constexpr Api kInvoke = {"bedrock-invoke", "invoke", "invoke-with-response-stream"};

// The {modelId} and {operation} of /model/{modelId}/{operation} (the
// operation follows the last '/'); false for another path.
bool SplitPath(absl::string_view path, absl::string_view* model, absl::string_view* operation) {
  if (!absl::ConsumePrefix(&path, "/model/")) return false;
  const size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return false;
  *model = path.substr(0, slash);
  *operation = path.substr(slash + 1);
  return true;
}

// `text` with its %XX escapes decoded; nullopt when a '%' is not followed
// by two hex digits.
std::optional<std::string> PercentDecode(absl::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size() || !absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      return std::nullopt;
    }
    const auto digit = [](char c) {
      return absl::ascii_isdigit(static_cast<unsigned char>(c))
                 ? c - '0'
                 : absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    };
    out.push_back(static_cast<char>(digit(text[i + 1]) * 16 + digit(text[i + 2])));
    i += 2;
  }
  return out;
}

bool IsFramed(absl::string_view content_type) {
  return absl::StartsWith(absl::AsciiStrToLower(content_type), kStreamContentType);
}

// What Converse and InvokeModel share: routes, errors and stream form.
class BedrockCodec : public Codec {
 public:
  explicit BedrockCodec(const Api& api) : api_(api) {}

  absl::string_view name() const override { return api_.name; }
  absl::string_view upstream() const override { return "bedrock"; }
  // @aws-sdk/client-bedrock-runtime (its serviceId "Bedrock Runtime"), as
  // every AWS SDK, reads AWS_ENDPOINT_URL_BEDROCK_RUNTIME, then
  // AWS_ENDPOINT_URL, and keeps the URL's path before /model/...
  std::pair<absl::string_view, absl::string_view> BaseUrlVariable() const override {
    return {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", ""};
  }
  // SigV4's service name for Bedrock Runtime (the SDK's signingProperties
  // name): a forwarded request is signed again for the upstream's address.
  absl::string_view aws_signing_name() const override { return "bedrock"; }
  std::vector<std::string> routes() const override {
    return {absl::StrCat("POST /model/{modelId}/", api_.whole),
            absl::StrCat("POST /model/{modelId}/", api_.stream)};
  }
  bool Serves(absl::string_view path) const override {
    absl::string_view model;
    absl::string_view operation;
    return SplitPath(path, &model, &operation) &&
           (operation == api_.whole || operation == api_.stream);
  }
  absl::StatusOr<CallRoute> Route(absl::string_view, absl::string_view path,
                                  absl::string_view query) const override {
    absl::string_view model;
    absl::string_view operation;
    SplitPath(path, &model, &operation);
    CallRoute call;
    call.path = std::string(path);
    call.query = std::string(query);
    call.framing = operation == api_.stream ? StreamFraming::kEventStream : StreamFraming::kNone;
    std::optional<std::string> decoded = PercentDecode(model);
    if (!decoded.has_value() || decoded->empty() || !validation::IsValidUtf8(*decoded)) {
      return absl::InvalidArgumentError(
          absl::StrCat("path: the model id in /model/{modelId}/", operation,
                       " is empty, not percent-encoded correctly or not valid UTF-8"));
    }
    call.model = *std::move(decoded);
    return call;
  }
  // Request ids and Bedrock's own answer headers (invocation latency, token
  // counts, the content type of an InvokeModel answer), and the error type
  // of a recorded error, which the SDKs read.
  bool ReplaysHeader(absl::string_view name) const override {
    return name == "x-amzn-requestid" || name == "x-amzn-errortype" ||
           absl::StartsWith(name, "x-amzn-bedrock-");
  }
  // Streams are frames; a recorded JSON body replays only to a caller not
  // streaming.
  bool SameForm(const CallRoute& call, absl::string_view recorded_content_type) const override {
    return IsFramed(recorded_content_type) == (call.framing == StreamFraming::kEventStream);
  }
  std::string StreamContentType(const CallRoute&) const override {
    return std::string(kStreamContentType);
  }
  std::string ErrorBody(const absl::Status& status, absl::string_view) const override {
    return bedrock::ErrorBody(status);
  }
  std::string UpstreamErrorMessage(absl::string_view body) const override {
    std::string message = bedrock::UpstreamErrorMessage(body);
    return message.empty() ? Codec::UpstreamErrorMessage(body) : message;
  }
  // Bedrock refuses an input too large as a ValidationException.
  std::string RequestErrorBody(int http_status, absl::string_view message) const override {
    const absl::StatusCode code =
        http_status == 413 ? absl::StatusCode::kInvalidArgument : StatusCodeForHttp(http_status);
    return bedrock::ErrorBody(absl::Status(code, message));
  }

 protected:
  // What the route says of the stream, which the body does not.
  static absl::StatusOr<ParsedRequest> WithStream(const CallRoute& call,
                                                  absl::StatusOr<ParsedRequest> parsed) {
    if (parsed.ok()) {
      parsed->stream = call.framing == StreamFraming::kEventStream;
      parsed->include_usage = parsed->stream;
      if (parsed->stream) parsed->stream_framing = StreamFraming::kEventStream;
    }
    return parsed;
  }

 private:
  const Api& api_;
};

class ConverseCodec final : public BedrockCodec {
 public:
  ConverseCodec() : BedrockCodec(kConverse) {}

  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return kIgnoredRequestFields;
  }
  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute& call,
                                             absl::string_view body) const override {
    return WithStream(call, bedrock::ParseRequest(body, call.model));
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return bedrock::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<StreamDecoder>();
  }
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext&) const override {
    return RenderResponse(response);
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext&) const override {
    return bedrock::StreamRenderer(chunks);
  }
};

class InvokeCodec final : public BedrockCodec {
 public:
  InvokeCodec() : BedrockCodec(kInvoke) {}

  // The body is the model's own JSON whatever the caller labels it: the
  // SDK sends application/octet-stream unless given `contentType`.
  bool AcceptsContentType(absl::string_view) const override { return true; }

  absl::Span<const absl::string_view> IgnoredRequestFields() const override {
    return anthropic::kIgnoredRequestFields;
  }
  absl::StatusOr<ParsedRequest> ParseRequest(const CallRoute& call,
                                             absl::string_view body) const override {
    return WithStream(call, ParseInvokeRequest(body, call.model));
  }
  absl::StatusOr<v1::CompletionResponse> ParseResponse(absl::string_view body) const override {
    return anthropic::ParseResponse(body);
  }
  std::unique_ptr<ChunkDecoder> NewDecoder() const override {
    return std::make_unique<InvokeStreamDecoder>();
  }
  // Anthropic's message, naming the model the path named when the answer
  // does not.
  absl::StatusOr<std::string> RenderBody(const v1::CompletionResponse& response,
                                         const RenderContext& context) const override {
    v1::CompletionResponse named = response;
    named.set_model(ModelFor(context, response));
    return anthropic::RenderResponse(named);
  }
  absl::StatusOr<std::unique_ptr<EventRenderer>> StreamRenderer(
      const google::protobuf::RepeatedPtrField<v1::CompletionChunk>& chunks,
      const RenderContext&) const override {
    return InvokeStreamRenderer(chunks);
  }
};

}  // namespace

std::unique_ptr<Codec> NewCodec() { return std::make_unique<ConverseCodec>(); }
std::unique_ptr<Codec> NewInvokeCodec() { return std::make_unique<InvokeCodec>(); }

}  // namespace bedrock
}  // namespace provider
}  // namespace understudy
