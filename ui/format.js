// Text for the page: numbers from the API, times, durations, clipped
// labels and JSON made readable. Pure functions of their arguments.

// A number from the API (int64 fields come as strings; absent is 0).
export const num = (v) => (v === undefined || v === null || v === '' ? 0 : Number(v));

// A time (µs since the epoch) in full, UTC: 2026-01-02T03:04:05.123456Z.
export function isoMicros(micros) {
  if (!micros) return '';
  const d = new Date(Math.floor(micros / 1000));
  const frac = String(Math.floor(micros % 1e6)).padStart(6, '0');
  return `${d.toISOString().slice(0, 19)}.${frac}Z`;
}

// A time to the second, local: 2026-01-02 03:04:05.
export function shortTime(micros) {
  if (!micros) return '—';
  const d = new Date(Math.floor(micros / 1000));
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// A span of time (µs) in the unit that reads best.
export function duration(micros) {
  if (micros < 0) return '—';
  const ms = micros / 1000;
  if (ms < 1) return `${Math.round(micros)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  const sec = ms / 1000;
  if (sec < 60) return `${sec.toFixed(sec < 10 ? 2 : 1)} s`;
  const min = Math.floor(sec / 60);
  if (min < 60) return `${min} min ${Math.round(sec - min * 60)} s`;
  return `${Math.floor(min / 60)} h ${min % 60} min`;
}

// A time after the run started (µs), as +12.3 ms.
export function offset(micros) {
  if (micros < 1000) return `+${Math.max(0, Math.round(micros))} µs`;
  if (micros < 1e6) return `+${(micros / 1000).toFixed(micros < 1e5 ? 1 : 0)} ms`;
  return `+${(micros / 1e6).toFixed(micros < 1e7 ? 2 : 1)} s`;
}

// `text` on one line, cut to `n` characters with an ellipsis.
export function clip(text, n) {
  const t = String(text ?? '').replace(/\s+/g, ' ').trim();
  return t.length > n ? `${t.slice(0, Math.max(1, n - 1))}…` : t;
}

// proto3 JSON as a reader wants it: fields at their default ("", [], {})
// left out, as the protobuf JSON mapping does unless told otherwise.
function compactJson(value) {
  if (Array.isArray(value)) return value.map(compactJson);
  if (!value || typeof value !== 'object') return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    const c = compactJson(v);
    if (c === '' || c === undefined || (Array.isArray(c) && !c.length) || (c && typeof c === 'object' && !Array.isArray(c) && !Object.keys(c).length)) continue;
    out[k] = c;
  }
  return out;
}

// A value as indented proto3 JSON without its default fields.
export function prettyJson(value) {
  return JSON.stringify(compactJson(value ?? {}), null, 2);
}

// JSON text made readable; other text as is.
export function prettyText(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text ?? '');
  }
}

// A value of a diff as a reader wants it: a JSON string as its text (real
// line breaks, no escapes), anything else as it is.
export function jsonValueText(v) {
  if (v === undefined || v === '') return '(absent)';
  try {
    const parsed = JSON.parse(v);
    if (typeof parsed === 'string') return parsed;
  } catch {
    // not JSON: shown as is
  }
  return String(v);
}
