// A tiny OpenAI-compatible upstream on 127.0.0.1:0 that plays three agents
// of a review loop, told apart by their system prompts:
//
//   orchestrator  continue({phase: execute}); after the reviewer's
//                 objection continue({phase: fix}); after "LGTM"
//                 continue({phase: done})
//   executor      write_file({path, content}); after the tool's result
//                 continue({phase: review}); with the reviewer's feedback in
//                 its request, the parameterized version of the file
//   reviewer      "SQL injection in login(): use a parameterized query." or,
//                 once the code has a placeholder, "LGTM: ..."
//
// Answers are a pure function of the request, so a recording of it replays
// exactly. Only POST /v1/chat/completions (not streamed) is served.
import http from 'node:http';

export const PROMPTS = {
  orchestrator: 'You are the orchestrator. Route the work between the executor and the reviewer.',
  executor: 'You are the executor. Write the code you are asked for.',
  reviewer: 'You are the reviewer. Review the code you are shown.',
};

export const FEEDBACK = 'SQL injection in login(): use a parameterized query.';
export const APPROVAL = 'LGTM: the query is parameterized now.';
export const INSECURE = "db.query(\"SELECT * FROM users WHERE name = '\" + name + \"'\")";
export const SECURE = 'db.query("SELECT * FROM users WHERE name = ?", [name])';

function text(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? '').join('');
  return '';
}

function decide(body) {
  const messages = body.messages ?? [];
  const system = text(messages.find((m) => m.role === 'system')?.content);
  const last = messages.at(-1) ?? {};
  const lastUser = text(messages.filter((m) => m.role === 'user').at(-1)?.content);
  if (system === PROMPTS.orchestrator) {
    if (lastUser.includes('LGTM')) return { tool: ['continue', { phase: 'done' }] };
    if (lastUser.includes('SQL injection')) return { tool: ['continue', { phase: 'fix' }] };
    return { tool: ['continue', { phase: 'execute' }] };
  }
  if (system === PROMPTS.executor) {
    if (last.role === 'tool') return { tool: ['continue', { phase: 'review' }] };
    const fix = lastUser.includes('parameterized query');
    return { tool: ['write_file', { path: 'login.js', content: fix ? SECURE : INSECURE }] };
  }
  if (system === PROMPTS.reviewer) {
    return { text: lastUser.includes('?"') ? APPROVAL : FEEDBACK };
  }
  return { text: 'I do not know this agent.' };
}

function completion(body, n) {
  const d = decide(body);
  const message = { role: 'assistant', content: d.text ?? null, refusal: null };
  if (d.tool) {
    message.tool_calls = [{
      id: `call_${n}`,
      type: 'function',
      function: { name: d.tool[0], arguments: JSON.stringify(d.tool[1]) },
    }];
  }
  return {
    id: `chatcmpl-fake-${n}`,
    object: 'chat.completion',
    created: 1700000000 + n,
    model: body.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: d.tool ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

// Resolves { url, requests, close() }: url is http://127.0.0.1:PORT (no /v1).
export async function startFakeOpenAI() {
  const requests = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error' } }));
        return;
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'malformed JSON', type: 'invalid_request_error' } }));
        return;
      }
      requests.push(body);
      // Ids derive from the conversation's length: deterministic per request.
      const answer = JSON.stringify(completion(body, (body.messages ?? []).length));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
