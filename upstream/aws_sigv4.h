// AWS Signature Version 4 for forwarded requests. An AWS SDK signs its
// request for the host and path it sends to — understudy's — so the
// signature it made cannot be forwarded: AWS checks it against its own host
// and the path it receives. Record and passthrough sign each forwarded
// request again, with the credentials the SDK itself reads from the same
// environment (`understudy record -- CMD` passes its environment on), and
// drop the SDK's signature. Neither is ever stored: requests' headers are
// not recorded.
//
//   absl::StatusOr<AwsSigner> signer = AwsSigner::FromEnvironment(
//       "bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com", getenv);
//   signer->Sign("POST", url, &headers, body, env->Now());
#ifndef UNDERSTUDY_UPSTREAM_AWS_SIGV4_H_
#define UNDERSTUDY_UPSTREAM_AWS_SIGV4_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace understudy {
namespace upstream {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  // "" for long-term keys; sent as x-amz-security-token otherwise.
  std::string session_token;
};

class AwsSigner {
 public:
  // `service` is the signing name ("bedrock"), `region` e.g. "us-east-1".
  AwsSigner(AwsCredentials credentials, std::string region, std::string service);

  // A signer for `service` forwarding to `base_url`, from the environment
  // `getenv` reads: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
  // AWS_SESSION_TOKEN; the region from the URL's host
  // (`SERVICE.REGION.amazonaws.com`), else AWS_REGION, else
  // AWS_DEFAULT_REGION. UNAUTHENTICATED naming what is missing (never a
  // value) when the keys or the region are not there: a forwarded request
  // cannot be signed, and such a failure is never recorded.
  static absl::StatusOr<AwsSigner> FromEnvironment(
      absl::string_view service, absl::string_view base_url,
      const std::function<const char*(const char*)>& getenv);

  // Signs a request to `url` (scheme, host[:port], path as sent — percent-
  // encoded — and query): removes any signature `headers` carry
  // (authorization, x-amz-date, x-amz-security-token,
  // x-amz-content-sha256), then adds x-amz-date, x-amz-content-sha256, the
  // session token if any, and the authorization over those, host and
  // content-type. `now` is the signing time.
  void Sign(absl::string_view method, absl::string_view url,
            std::vector<std::pair<std::string, std::string>>* headers, absl::string_view body,
            absl::Time now) const;

 private:
  AwsCredentials credentials_;
  std::string region_;
  std::string service_;
};

// Lower-case hex of SHA-256(`data`).
std::string Sha256Hex(absl::string_view data);

}  // namespace upstream
}  // namespace understudy

#endif  // UNDERSTUDY_UPSTREAM_AWS_SIGV4_H_
