#include "upstream/aws_sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace understudy {
namespace upstream {
namespace {

std::string Hex(const unsigned char* bytes, size_t n) {
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(bytes), n));
}

std::string Hmac(absl::string_view key, absl::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<const char*>(out), n);
}

// RFC 3986 percent-encoding of every byte but the unreserved ones, upper
// case, as SigV4 wants it; '/' kept when `keep_slash`.
std::string UriEncode(absl::string_view s, bool keep_slash) {
  std::string out;
  for (const char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "%", absl::AsciiStrToUpper(absl::BytesToHexString(absl::string_view(&c, 1))));
    }
  }
  return out;
}

// `s` with its %XX escapes decoded ('+' is a space, as forms write it); a
// '%' not followed by two hex digits stays as it is.
std::string PercentDecode(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() &&
               absl::ascii_isxdigit(s[i + 1]) && absl::ascii_isxdigit(s[i + 2])) {
      out += absl::HexStringToBytes(s.substr(i + 1, 2));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The query's pairs decoded, encoded canonically and sorted: SigV4's
// canonical query string.
std::string CanonicalQuery(absl::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    const absl::string_view value = eq == absl::string_view::npos ? "" : pair.substr(eq + 1);
    pairs.emplace_back(UriEncode(PercentDecode(pair.substr(0, eq)), false),
                       UriEncode(PercentDecode(value), false));
  }
  std::sort(pairs.begin(), pairs.end());
  return absl::StrJoin(pairs, "&", [](std::string* out, const auto& p) {
    absl::StrAppend(out, p.first, "=", p.second);
  });
}

bool IsSignatureHeader(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  return lower == "authorization" || lower == "x-amz-date" || lower == "x-amz-security-token" ||
         lower == "x-amz-content-sha256";
}

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return Hex(digest, sizeof(digest));
}

AwsSigner::AwsSigner(AwsCredentials credentials, std::string region, std::string service)
    : credentials_(std::move(credentials)), region_(std::move(region)), service_(std::move(service)) {}

absl::StatusOr<AwsSigner> AwsSigner::FromEnvironment(
    absl::string_view service, absl::string_view base_url,
    const std::function<const char*(const char*)>& getenv) {
  auto var = [&](const char* name) {
    const char* value = getenv(name);
    return value == nullptr ? std::string() : std::string(value);
  };
  AwsCredentials credentials{var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"),
                             var("AWS_SESSION_TOKEN")};
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "forwarding to ", service, " needs AWS credentials in understudy's environment "
        "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and AWS_SESSION_TOKEN for temporary "
        "ones): the SDK's own signature names understudy's address, so understudy signs "
        "each forwarded request again"));
  }
  // https://SERVICE-runtime.REGION.amazonaws.com[/...]
  absl::string_view host = base_url;
  absl::ConsumePrefix(&host, "https://") || absl::ConsumePrefix(&host, "http://");
  host = host.substr(0, host.find_first_of(":/"));
  std::string region;
  const std::vector<absl::string_view> labels = absl::StrSplit(host, '.');
  if (labels.size() == 4 && labels[2] == "amazonaws" && labels[3] == "com") {
    region = std::string(labels[1]);
  }
  if (region.empty()) region = var("AWS_REGION");
  if (region.empty()) region = var("AWS_DEFAULT_REGION");
  if (region.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "forwarding to ", service, ": no AWS region (the upstream URL's host is not "
        "SERVICE.REGION.amazonaws.com, and neither AWS_REGION nor AWS_DEFAULT_REGION is set)"));
  }
  return AwsSigner(std::move(credentials), std::move(region), std::string(service));
}

void AwsSigner::Sign(absl::string_view method, absl::string_view url,
                     std::vector<std::pair<std::string, std::string>>* headers,
                     absl::string_view body, absl::Time now) const {
  headers->erase(std::remove_if(headers->begin(), headers->end(),
                                [](const auto& h) { return IsSignatureHeader(h.first); }),
                 headers->end());
  absl::string_view rest = url;
  absl::ConsumePrefix(&rest, "https://") || absl::ConsumePrefix(&rest, "http://");
  const size_t slash = rest.find('/');
  const absl::string_view host = rest.substr(0, slash);
  absl::string_view target = slash == absl::string_view::npos ? "/" : rest.substr(slash);
  const size_t q = target.find('?');
  const absl::string_view path = target.substr(0, q);
  const absl::string_view query = q == absl::string_view::npos ? "" : target.substr(q + 1);

  const std::string amz_date = absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone());
  const std::string date = amz_date.substr(0, 8);
  const std::string payload_hash = Sha256Hex(body);
  headers->emplace_back("x-amz-date", amz_date);
  headers->emplace_back("x-amz-content-sha256", payload_hash);
  if (!credentials_.session_token.empty()) {
    headers->emplace_back("x-amz-security-token", credentials_.session_token);
  }
  std::map<std::string, std::string> signed_headers = {{"host", std::string(host)}};
  for (const auto& [name, value] : *headers) {
    const std::string lower = absl::AsciiStrToLower(name);
    if (lower == "content-type" || absl::StartsWith(lower, "x-amz-")) {
      signed_headers[lower] = std::string(absl::StripAsciiWhitespace(value));
    }
  }
  std::string canonical_headers;
  std::vector<std::string> names;
  for (const auto& [name, value] : signed_headers) {
    absl::StrAppend(&canonical_headers, name, ":", value, "\n");
    names.push_back(name);
  }
  const std::string signed_names = absl::StrJoin(names, ";");
  // Services other than S3 encode the path as sent once more.
  const std::string canonical_request =
      absl::StrJoin({std::string(method), UriEncode(path, /*keep_slash=*/true),
                     CanonicalQuery(query), canonical_headers, signed_names, payload_hash},
                    "\n");
  const std::string scope = absl::StrCat(date, "/", region_, "/", service_, "/aws4_request");
  const std::string string_to_sign = absl::StrCat("AWS4-HMAC-SHA256\n", amz_date, "\n", scope,
                                                  "\n", Sha256Hex(canonical_request));
  std::string key = Hmac(absl::StrCat("AWS4", credentials_.secret_access_key), date);
  key = Hmac(key, region_);
  key = Hmac(key, service_);
  key = Hmac(key, "aws4_request");
  const std::string signature = absl::BytesToHexString(Hmac(key, string_to_sign));
  headers->emplace_back("authorization",
                        absl::StrCat("AWS4-HMAC-SHA256 Credential=", credentials_.access_key_id,
                                     "/", scope, ", SignedHeaders=", signed_names,
                                     ", Signature=", signature));
}

}  // namespace upstream
}  // namespace understudy
