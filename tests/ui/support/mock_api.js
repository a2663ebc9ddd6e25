// A stand-in for understudy's /ui and /api/v1 routes (docs/ui.md), for fast
// tests of the page alone and for working on it without a C++ build: it
// serves every file of ui/ as the binary does, with the same headers (read
// on each request, so edits show on reload), and the canned data of
// fixture.js.
//
//   const mock = await startMockApi();
//   mock.url                       http://127.0.0.1:PORT
//   mock.append(runId, events)     appends to a run, live to /watch clients
//   mock.endRun(runId)             ends it: the watchers get `event: end`
//   mock.requests                  [{ method, url }] seen so far
//   await mock.close()
//
// `node tests/ui/support/mock_api.js [PORT]` runs it by hand.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { buildFixture } from './fixture.js';

export const UI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'ui');

export const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
  "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

// As service/ui_assets.cc's UiContentType.
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon',
  '.json': 'application/json', '.txt': 'text/plain; charset=utf-8', '.woff2': 'font/woff2',
};

// The file of ui/ that /ui/`name` names, or null: as the binary embeds them
// (service/embed_ui.cmake), any file but BUILD files and dotfiles, by a
// plain relative path.
function uiFile(uiDir, name) {
  const parts = name.split('/');
  if (!/^[A-Za-z0-9._/-]+$/.test(name) || parts.some((p) => !p || p.startsWith('.'))) return null;
  if (['BUILD', 'BUILD.bazel'].includes(parts.at(-1))) return null;
  return path.join(uiDir, ...parts);
}

export async function startMockApi({ uiDir = UI_DIR, fixture = buildFixture() } = {}) {
  const { sessions, exchanges, runs, events } = fixture;
  const watchers = new Map(); // run id -> Set<res>
  const requests = [];

  const send = (res, status, body, type = 'application/json') => {
    const data = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-cache', 'content-length': Buffer.byteLength(data) });
    res.end(data);
  };
  const error = (res, status, code, message) => send(res, status, { error: { code, message } });
  const findRun = (id) => runs.find((r) => r.id === id);
  const sse = (res, ev) => res.write(`id: ${ev.seq}\nevent: trace\ndata: ${JSON.stringify(ev)}\n\n`);

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://mock');
    requests.push({ method: req.method, url: req.url });
    const p = url.pathname;
    if (p === '/ui' || p.startsWith('/ui/')) {
      const name = p === '/ui' || p === '/ui/' ? 'index.html' : p.slice(4);
      const file = uiFile(uiDir, name);
      let body;
      try {
        if (!file) throw new Error('not a file of ui/');
        body = fs.readFileSync(file);
      } catch {
        return send(res, 404, 'not found', 'text/plain');
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream', 'cache-control': 'no-cache',
        'content-security-policy': CSP, 'x-content-type-options': 'nosniff', 'content-length': body.length,
      });
      return res.end(body);
    }
    if (!p.startsWith('/api/v1/')) return send(res, 404, 'not found', 'text/plain');
    const parts = p.slice('/api/v1/'.length).split('/').map(decodeURIComponent);
    const method = req.method;
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      if (parts[0] === 'sessions' && parts.length === 1 && method === 'GET') return send(res, 200, { sessions });
      if (parts[0] === 'sessions' && parts.length === 2 && method === 'GET') {
        const versions = sessions.filter((x) => x.name === parts[1]);
        if (!versions.length) return error(res, 404, 'NOT_FOUND', `session "${parts[1]}" not found`);
        const v = Number(url.searchParams.get('version') || versions.at(-1).version);
        const session = versions.find((x) => Number(x.version) === v);
        if (!session) return error(res, 404, 'NOT_FOUND', `session "${parts[1]}@${v}" not found`);
        return send(res, 200, { session, exchanges: exchanges[`${parts[1]}@${v}`] || [] });
      }
      if (parts[0] === 'runs' && parts.length === 1 && method === 'GET') {
        const name = url.searchParams.get('session');
        const list = runs.filter((r) => !name || r.session === name)
          .sort((a, b) => Number(b.startedAtMicros) - Number(a.startedAtMicros));
        return send(res, 200, { runs: list });
      }
      if (parts[0] !== 'runs' || parts.length < 2) return error(res, 404, 'NOT_FOUND', `no route ${p}`);
      const run = findRun(parts[1]);
      if (!run) return error(res, 404, 'NOT_FOUND', `run "${parts[1]}" not found`);
      const evs = events[run.id] || [];
      if (parts.length === 2 && method === 'GET') return send(res, 200, run);
      if (parts[2] === 'events' && method === 'GET') {
        const after = Number(url.searchParams.get('after_seq') || 0);
        const limit = Math.min(Number(url.searchParams.get('limit') || 1000), 10000);
        const kinds = (url.searchParams.get('kinds') || '').split(',').filter(Boolean);
        const page = evs.filter((e) => Number(e.seq) > after && (!kinds.length || kinds.includes(e.kind))).slice(0, limit);
        const more = page.length === limit && evs.some((e) => Number(e.seq) > Number(page.at(-1).seq));
        return send(res, 200, { events: page, ...(more ? { nextAfterSeq: page.at(-1).seq } : {}) });
      }
      if (parts[2] === 'watch' && method === 'GET') {
        const after = Number(url.searchParams.get('after_seq') || 0);
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const ev of evs) if (Number(ev.seq) > after) sse(res, ev);
        if (run.state !== 'RUN_STATE_ACTIVE') return res.end('event: end\ndata: {}\n\n');
        if (!watchers.has(run.id)) watchers.set(run.id, new Set());
        watchers.get(run.id).add(res);
        res.on('close', () => watchers.get(run.id)?.delete(res));
        return;
      }
      if (parts[2] === 'assert' && method === 'POST') {
        if (!/assertions\s*:/.test(raw)) return error(res, 400, 'INVALID_ARGUMENT', 'spec: assertions: required');
        const missSeqs = evs.filter((e) => e.kind === 'miss').map((e) => e.seq);
        const results = [];
        if (/no_misses/.test(raw)) {
          results.push(missSeqs.length
            ? { name: 'no_misses', explanation: `no_misses: the run had ${missSeqs.length} misses: ${missSeqs.map((q) => `event #${q}`).join(', ')}`, divergenceIndex: '-1', eventSeqs: missSeqs }
            : { name: 'no_misses', passed: true, explanation: 'no_misses: no request missed', divergenceIndex: '-1' });
        }
        const passed = results.every((r) => r.passed);
        return send(res, 200, { ...(passed ? { passed } : {}), results, report: results.map((r) => `${r.passed ? 'PASS' : 'FAIL'} ${r.name}`).join('\n') });
      }
      return error(res, 405, 'METHOD_NOT_ALLOWED', `${method} not allowed on ${p}`);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(process.env.MOCK_PORT || 0), '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    fixture,
    append(runId, list) {
      events[runId] = (events[runId] || []).concat(list);
      for (const res of watchers.get(runId) || []) for (const ev of list) sse(res, ev);
    },
    endRun(runId) {
      const run = findRun(runId);
      run.state = 'RUN_STATE_ENDED';
      run.endedAtMicros = String(Number(run.startedAtMicros) + 1000000);
      for (const res of watchers.get(runId) || []) res.end('event: end\ndata: {}\n\n');
      watchers.delete(runId);
    },
    close: () => new Promise((resolve) => {
      for (const set of watchers.values()) for (const res of set) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2]) process.env.MOCK_PORT = process.argv[2];
  const mock = await startMockApi();
  console.log(`mock understudy UI at ${mock.url}/ui`);
}
