// What both fake providers share: a node:http server on 127.0.0.1:0 that
// counts TCP connections, logs every request (headers included, to prove
// what understudy passed through) and every response it sent, can hold a
// stream open until told to go on, and can be closed.
//
// The "model" behind both fakes is `defaultBrain`: a deterministic script
// of the conversation (see below). A test may pass its own `reply`.
import { createHash } from 'node:crypto';
import http from 'node:http';

// The reply to a conversation, provider-neutral:
//   { text, toolCalls: [{ name, arguments: object }], inputTokens, outputTokens }
//
// - tool results in the conversation → a final answer quoting them;
// - tools offered → a call of every tool named in the last user message
//   (all of them at once: parallel calls), or of the first tool; arguments
//   come from `key=value` words in that message, else `KEY-INDEX`;
// - otherwise → an answer that quotes the last user message.
export function defaultBrain({ lastUserText, toolResults, tools }) {
  if (toolResults.length > 0) {
    return { text: `Here is what the tools said: ${toolResults.map((r) => r.content).join('; ')}.`, toolCalls: [] };
  }
  if (tools.length > 0) {
    let chosen = tools.filter((t) => lastUserText.includes(t.name));
    if (chosen.length === 0) chosen = [tools[0]];
    const given = Object.fromEntries([...lastUserText.matchAll(/(\w+)=([^\s,]+)/g)].map((m) => [m[1], m[2]]));
    return {
      text: 'Let me check that.',
      toolCalls: chosen.map((tool, i) => {
        const args = {};
        for (const [key, schema] of Object.entries(tool.schema?.properties ?? {})) {
          if (schema.type === 'number' || schema.type === 'integer') args[key] = i + 1;
          else if (schema.type === 'boolean') args[key] = true;
          else args[key] = given[key] ?? `${key}-${i}`;
        }
        return { name: tool.name, arguments: args };
      }),
    };
  }
  return {
    text: `You said: ${lastUserText}. Here is a considered answer, in several words, to stream back.`,
    toolCalls: [],
  };
}

export function words(s) {
  return (s.match(/\S+/g) || []).length;
}

// Stable hex digest of a request: ids and timestamps derive from it, so the
// same request always gets the same answer bytes.
export function digest(path, bodyText) {
  return createHash('sha256').update(`${path}\n${bodyText}`).digest('hex');
}

// Splits text into stream deltas: one word (with its trailing space) each.
export function textPieces(text) {
  return text.match(/\S+\s*|\s+/g) || [];
}

// Splits a string into fragments of `n` characters (at least one, maybe "").
export function fragments(s, n = 7) {
  const out = [];
  for (let i = 0; i < s.length; i += n) out.push(s.slice(i, i + n));
  return out.length ? out : [''];
}

export class FakeServer {
  // handler(req, parsedBody, bodyText, res, fake) answers one request.
  constructor(name, handler, { holdWhen = () => false, holdAfterEvents = 2 } = {}) {
    this.name = name;
    this.handler = handler;
    this.holdWhen = holdWhen;
    this.holdAfterEvents = holdAfterEvents;
    this.connections = 0;
    this.requests = [];
    this.sent = [];
    this.streamsAborted = 0;
    this.streamsCompleted = 0;
    this.holding = 0;
    this.releases = new Set();
    this.server = http.createServer((req, res) => this.onRequest(req, res));
    this.server.on('connection', () => {
      this.connections += 1;
    });
  }

  async listen() {
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', resolve);
    });
    this.port = this.server.address().port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  onRequest(req, res) {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', async () => {
      const bodyText = Buffer.concat(parts).toString('utf8');
      let body = null;
      try {
        body = JSON.parse(bodyText);
      } catch {
        // answered as a 400 by the handler
      }
      this.requests.push({ method: req.method, path: req.url, headers: { ...req.headers }, bodyText, body });
      try {
        await this.handler(req, body, bodyText, res, this);
      } catch (e) {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `fake ${this.name}: ${e.message}` } }));
        } else {
          res.destroy();
        }
      }
    });
  }

  // Sends a whole JSON response and logs it.
  sendJson(req, res, status, object, extraHeaders = {}) {
    const text = JSON.stringify(object);
    this.sent.push({ path: req.url, status, body: text });
    res.writeHead(status, { 'content-type': 'application/json', ...extraHeaders });
    res.end(text);
  }

  // Writes SSE `events` (raw strings, each ending in a blank line), holding
  // after `holdAfterEvents` of them when `hold` is set until release() or
  // the client goes away. Logs what was sent and how the stream ended.
  async sendStream(req, res, events, { hold = false, headers = {} } = {}) {
    const record = { path: req.url, status: 200, events: [], body: '', completed: false };
    this.sent.push(record);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      ...headers,
    });
    res.flushHeaders();
    let closed = false;
    const closedEarly = new Promise((resolve) => {
      res.on('close', () => {
        closed = true;
        resolve();
      });
    });
    for (let i = 0; i < events.length; ++i) {
      if (closed) break;
      if (hold && i === this.holdAfterEvents) {
        this.holding += 1;
        let release;
        const released = new Promise((resolve) => {
          release = resolve;
        });
        this.releases.add(release);
        await Promise.race([released, closedEarly]);
        this.releases.delete(release);
        this.holding -= 1;
        if (closed) break;
      }
      res.write(events[i]);
      record.events.push(events[i]);
      record.body += events[i];
    }
    if (closed && !res.writableEnded) {
      this.streamsAborted += 1;
      return;
    }
    res.end();
    record.completed = true;
    this.streamsCompleted += 1;
  }

  // Lets every held stream go on.
  release() {
    for (const r of this.releases) r();
  }

  // Stops listening and drops every connection; resolves once closed.
  async close() {
    this.release();
    await new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

export function errorOpenAI(fake, req, res, status, message, type, code = null) {
  fake.sendJson(req, res, status, { error: { message, type, param: null, code } });
}

export function errorAnthropic(fake, req, res, status, message, type) {
  fake.sendJson(req, res, status, { type: 'error', error: { type, message } });
}
