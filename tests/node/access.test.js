// A shared server started with an access token, used through the official
// SDKs: agents change nothing but the key they send; a wrong or missing key
// is the SDK's own AuthenticationError; a recording agent keeps its real
// provider key for the upstream by sending the token in X-Understudy-Token;
// and over TLS (the SDKs trusting the certificate through NODE_EXTRA_CA_CERTS)
// the same holds.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { FIXTURES, Server, run, requireBinary, tempDir } from './lib/harness.js';
import { anthropicClient, openaiClient, startFake } from './lib/record_replay.js';

requireBinary();

const TOKEN = 'shared-token-0123456789abcdef';
const REAL_KEY = 'sk-real-provider-key-4242';

function tokenFile(dir) {
  const file = path.join(dir, 'token');
  fs.writeFileSync(file, `${TOKEN}\n`, { mode: 0o600 });
  return file;
}

function scenario(dir) {
  const file = path.join(dir, 'answer.yaml');
  fs.writeFileSync(file, 'schema: understudy.scenario/v1\ndefault: {respond: {content: "hello from the token server"}}\n');
  return file;
}

const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

test('access: the SDKs work with the token as their key and fail cleanly without it', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  const server = await Server.start(t, dir, {
    args: ['--auth-token-file', tokenFile(dir), '--mode', 'replay', '--scenario', scenario(dir)],
  });
  const good = await openaiClient(server.http, { apiKey: TOKEN });
  const answer = await good.chat.completions.create(ask);
  assert.equal(answer.choices[0].message.content, 'hello from the token server');
  const stream = await good.chat.completions.create({ ...ask, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'hello from the token server');
  const models = await good.models.list();
  assert.ok(Array.isArray(models.data));

  const OpenAI = (await import('openai')).default;
  for (const apiKey of ['sk-wrong-key-0123456789', '']) {
    const bad = await openaiClient(server.http, { apiKey: apiKey || 'x' });
    await assert.rejects(bad.chat.completions.create(ask), (error) => {
      assert.ok(error instanceof OpenAI.AuthenticationError, `${error}`);
      assert.equal(error.status, 401);
      assert.match(error.message, /access token/);
      return true;
    });
  }

  const Anthropic = (await import('@anthropic-ai/sdk')).default;
  const claude = await anthropicClient(server.http, { apiKey: TOKEN });
  const message = await claude.messages.create({ model: 'claude-haiku-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(message.content[0].text, 'hello from the token server');
  const wrong = await anthropicClient(server.http, { apiKey: 'sk-ant-wrong-0123456789' });
  await assert.rejects(
    wrong.messages.create({ model: 'claude-haiku-4-5', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }),
    (error) => error instanceof Anthropic.AuthenticationError && error.status === 401,
  );
  assert.doesNotMatch(server.stderr(), new RegExp(TOKEN), 'the token is never logged');
});

test('access: recording with the token in X-Understudy-Token passes the real key upstream, never the token', { timeout: 30000 }, async (t) => {
  const dir = tempDir(t);
  const fake = await startFake('openai');
  t.after(() => fake.close());
  const server = await Server.start(t, dir, {
    args: ['--auth-token-file', tokenFile(dir), '--mode', 'record', '--session', 'keyed', '--upstream', `openai=${fake.url}`],
  });
  const OpenAI = (await import('openai')).default;
  const agent = new OpenAI({ apiKey: REAL_KEY, baseURL: `${server.http}/v1`, maxRetries: 0, defaultHeaders: { 'X-Understudy-Token': TOKEN } });
  await agent.chat.completions.create(ask);
  assert.equal(fake.requests.length, 1);
  assert.equal(fake.requests[0].headers.authorization, `Bearer ${REAL_KEY}`);
  for (const value of Object.values(fake.requests[0].headers)) {
    assert.ok(!String(value).includes(TOKEN), 'the token never reaches the upstream');
  }
  // Without it, the real key alone is not the server's token: refused,
  // and nothing goes upstream.
  const anonymous = new OpenAI({ apiKey: REAL_KEY, baseURL: `${server.http}/v1`, maxRetries: 0 });
  await assert.rejects(anonymous.chat.completions.create(ask), (e) => e instanceof OpenAI.AuthenticationError);
  assert.equal(fake.requests.length, 1);
  assert.equal(await server.stop(), 0);
});

test('access: over TLS the SDKs trust the server through NODE_EXTRA_CA_CERTS and send only the token', { timeout: 40000 }, async (t) => {
  const dir = tempDir(t);
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const made = await run(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
      '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    { program: '/usr/bin/openssl' },
  );
  assert.equal(made.code, 0, made.stderr);
  const server = await Server.start(t, dir, {
    args: ['--auth-token-file', tokenFile(dir), '--tls-cert', cert, '--tls-key', key, '--mode', 'replay', '--scenario', scenario(dir)],
  });
  const https = server.http.replace('http://', 'https://');
  // A fresh Node: NODE_EXTRA_CA_CERTS is read at start-up.
  const client = path.join(FIXTURES, 'tls_client.mjs');
  const good = await run([client, https, TOKEN], { program: process.execPath, env: { NODE_EXTRA_CA_CERTS: cert } });
  assert.equal(good.code, 0, good.stderr);
  assert.equal(good.stdout.trim(), 'openai: hello from the token server | anthropic: hello from the token server');
  const bad = await run([client, https, 'sk-wrong-key-0123456789'], { program: process.execPath, env: { NODE_EXTRA_CA_CERTS: cert } });
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /401/);
  const untrusted = await run([client, https, TOKEN], { program: process.execPath });
  assert.notEqual(untrusted.code, 0, 'without the CA the certificate is refused');
});
