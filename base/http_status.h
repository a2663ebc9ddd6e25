// The one place where absl::Status becomes an HTTP status.
#ifndef UNDERSTUDY_BASE_HTTP_STATUS_H_
#define UNDERSTUDY_BASE_HTTP_STATUS_H_

#include "absl/status/status.h"

namespace understudy {

// INVALID_ARGUMENT 400, UNAUTHENTICATED 401, PERMISSION_DENIED 403,
// NOT_FOUND 404, ALREADY_EXISTS / ABORTED 409, FAILED_PRECONDITION 412,
// RESOURCE_EXHAUSTED 429, CANCELLED 499, UNIMPLEMENTED 501, UNAVAILABLE 503,
// DEADLINE_EXCEEDED 504, everything else 500.
int HttpStatusFor(absl::StatusCode code);

// The reverse, for an upstream's HTTP error recorded as an exchange error:
// 400 INVALID_ARGUMENT, 401, 403, 404, 409 ABORTED, 413/429
// RESOURCE_EXHAUSTED, 5xx UNAVAILABLE/INTERNAL, …; 2xx is OK.
absl::StatusCode StatusCodeForHttp(int status);

}  // namespace understudy

#endif  // UNDERSTUDY_BASE_HTTP_STATUS_H_
