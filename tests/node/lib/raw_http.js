// A minimal HTTP/1.1 client over a raw socket, for what fetch hides: the
// chunk boundaries of a chunked response (one server write per SSE event),
// bodies that break the rules, and hanging up mid-answer.
import net from 'node:net';
import { withTimeout } from './harness.js';

// Parses one HTTP/1.1 response from `buf`. Returns null until it is
// complete; else { status, headers (lower-case names), body (Buffer),
// chunks (Buffers, for chunked encoding), rest }.
export function parseResponse(buf, { untilClose = false } = {}) {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let pos = headEnd + 4;
  if ((headers['transfer-encoding'] || '').toLowerCase() === 'chunked') {
    const chunks = [];
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', pos);
      if (lineEnd < 0) return null;
      const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1').split(';')[0], 16);
      if (Number.isNaN(size)) throw new Error(`bad chunk size at byte ${pos}`);
      if (size === 0) {
        // Last chunk; no trailers expected.
        const end = buf.indexOf('\r\n', lineEnd + 2);
        if (end < 0) return null;
        return { status, headers, chunks, body: Buffer.concat(chunks), rest: buf.subarray(end + 2) };
      }
      if (buf.length < lineEnd + 2 + size + 2) return null;
      chunks.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      pos = lineEnd + 2 + size + 2;
    }
  }
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (buf.length < pos + n) return null;
    return { status, headers, body: buf.subarray(pos, pos + n), rest: buf.subarray(pos + n) };
  }
  if (!untilClose) return null;
  return { status, headers, body: buf.subarray(pos), rest: Buffer.alloc(0) };
}

// Sends `request` (a Buffer or string, the whole request as bytes) to
// host:port and resolves the parsed response. The socket closes after.
export async function rawRequest(url, request, { timeoutMs = 10000 } = {}) {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ host: hostname, port: Number(port) });
  socket.on('error', () => {}); // surfaced through 'close' below
  let buf = Buffer.alloc(0);
  const done = new Promise((resolve, reject) => {
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      try {
        const r = parseResponse(buf);
        if (r) resolve(r);
      } catch (e) {
        reject(e);
      }
    });
    socket.on('close', () => {
      try {
        const r = parseResponse(buf, { untilClose: true });
        if (r) resolve(r);
        else reject(new Error(`connection closed after ${buf.length} bytes without a whole response`));
      } catch (e) {
        reject(e);
      }
    });
  });
  socket.write(request);
  try {
    return await withTimeout(done, timeoutMs, `response from ${url}`);
  } finally {
    socket.destroy();
  }
}

// A POST with a JSON body as bytes.
export function postBytes(url, body, headers = {}) {
  const u = new URL(url);
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const lines = [
    `POST ${u.pathname}${u.search} HTTP/1.1`,
    `Host: ${u.host}`,
    `Content-Length: ${b.length}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), b]);
}

// Opens a streamed request and reads until `enough(bodyText)` is true, then
// destroys the socket: a client that hangs up mid-answer. Resolves the body
// text received (de-chunked).
export async function hangUpMidStream(url, request, enough, { timeoutMs = 10000 } = {}) {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ host: hostname, port: Number(port) });
  socket.on('error', () => {});
  let buf = Buffer.alloc(0);
  const got = new Promise((resolve, reject) => {
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      // De-chunk what is complete so far.
      let pos = headEnd + 4;
      let text = '';
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', pos);
        if (lineEnd < 0) break;
        const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1'), 16);
        if (!(size > 0) || buf.length < lineEnd + 2 + size + 2) break;
        text += buf.subarray(lineEnd + 2, lineEnd + 2 + size).toString('utf8');
        pos = lineEnd + 2 + size + 2;
      }
      if (enough(text, buf.subarray(0, headEnd).toString('latin1'))) resolve(text);
    });
    socket.on('close', () => reject(new Error(`server closed the stream first; got ${JSON.stringify(buf.toString())}`)));
  });
  socket.write(request);
  try {
    return await withTimeout(got, timeoutMs, `the first events of a stream from ${url}`);
  } finally {
    socket.destroy();
  }
}
