// The page's only way to the server: the JSON API under /api/v1/
// (docs/ui.md). Fields follow protobuf's JSON mapping (lowerCamelCase, int64
// as strings, defaults omitted); enums may come as names or numbers.

import { num } from './format.js';

const API = '/api/v1';

// What a failed call says: `status` is the HTTP status (0: the server could
// not be reached), `code` the API's error code (NOT_FOUND, ...).
class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The JSON answer to `path` (under /api/v1). Throws an ApiError when the
// server cannot be reached or answers an error, and an AbortError when
// `signal` aborts.
export async function api(path, { method = 'GET', body, signal } = {}) {
  let res;
  try {
    res = await fetch(API + path, {
      method,
      body,
      signal,
      headers: body === undefined ? {} : { 'content-type': 'text/plain' },
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'UNAVAILABLE', `cannot reach the server (${e.message})`);
  }
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    if (res.ok) throw new ApiError(res.status, 'BAD_RESPONSE', `${method} ${API}${path}: the answer is not JSON`);
  }
  if (!res.ok) {
    const err = (json && json.error) || {};
    throw new ApiError(res.status, err.code || String(res.status),
      err.message || `${method} ${API}${path} answered HTTP ${res.status}`);
  }
  return json;
}

// All of a run's events, page by page.
export async function loadEvents(runId, signal) {
  const events = [];
  let after = 0;
  for (;;) {
    const page = await api(`/runs/${encodeURIComponent(runId)}/events?after_seq=${after}&limit=10000`, { signal });
    events.push(...(page.events || []));
    const next = num(page.nextAfterSeq);
    if (!next || next <= after) break;
    after = next;
  }
  return events;
}

// The run's events after `afterSeq` as server-sent events: `trace` ones,
// then `end` once the run has ended. The caller closes it.
export function watchEvents(runId, afterSeq) {
  return new EventSource(`${API}/runs/${encodeURIComponent(runId)}/watch?after_seq=${afterSeq}`);
}
