// Answers no upstream ever gave (a scenario's rules, nothing recorded),
// rendered in the shape of each new API and read by its own client: text
// and a tool call, whole and streamed, over Azure OpenAI, Vertex AI,
// Ollama (NDJSON), Cohere (SSE) and Bedrock (event-stream frames, InvokeModel
// included). Each call is an exchange of the trace, with its canonical
// model and what answered it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { Server, requireBinary, tempDir } from '../node/lib/harness.js';
import { traceOf } from './lib/journey.js';
import { FIXTURES, genaiSdk, openaiSdk } from './lib/sdk.js';

requireBinary();

const TEXT = 'Scripted answer, in your API shape.';
const WEATHER = 'What is the weather in Oslo?';

test('scripted answers in every new API\'s shape, read by each official client', { timeout: 90000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-scripted-');
  const server = await Server.start(t, dir, { args: ['--mode', 'replay', '--scenario', path.join(FIXTURES, 'scripted_rules.yaml')] });
  const base = `${server.http}/run/${server.run}`;

  // Azure OpenAI: chat whole and streamed, a tool call.
  const { AzureOpenAI } = await import('openai');
  await openaiSdk();
  const azure = new AzureOpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', apiVersion: '2024-10-21', maxRetries: 0 });
  const chat = await azure.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
  assert.equal(chat.choices[0].message.content, TEXT);
  let streamed = '';
  for await (const c of await azure.chat.completions.create({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hello' }] })) {
    streamed += c.choices[0]?.delta?.content ?? '';
  }
  assert.equal(streamed, TEXT);
  const azureTool = await azure.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: WEATHER }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }] });
  assert.deepEqual(JSON.parse(azureTool.choices[0].message.tool_calls[0].function.arguments), { city: 'Oslo' });

  // Vertex AI (express mode): whole and streamed.
  const { GoogleGenAI } = await genaiSdk();
  const vertex = new GoogleGenAI({ vertexai: true, apiKey: 'unused', httpOptions: { baseUrl: base } });
  assert.equal((await vertex.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hello' })).text, TEXT);
  let vstream = '';
  for await (const c of await vertex.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'hello' })) vstream += c.text ?? '';
  assert.equal(vstream, TEXT);
  const vtool = await vertex.models.generateContent({ model: 'gemini-2.5-flash', contents: WEATHER });
  assert.deepEqual(vtool.functionCalls[0].args, { city: 'Oslo' });

  // Ollama: whole, NDJSON stream, a tool call with object arguments.
  const { Ollama } = await import('ollama');
  const ollama = new Ollama({ host: base });
  const o = await ollama.chat({ model: 'llama3.2:3b', messages: [{ role: 'user', content: 'hello' }] });
  assert.equal(o.message.content, TEXT);
  assert.equal(o.done, true);
  let ostream = '';
  let last;
  for await (const part of await ollama.chat({ model: 'llama3.2:3b', stream: true, messages: [{ role: 'user', content: 'hello' }] })) {
    ostream += part.message.content;
    last = part;
  }
  assert.equal(ostream, TEXT);
  assert.equal(last.done, true);
  const otool = await ollama.chat({ model: 'llama3.2:3b', messages: [{ role: 'user', content: WEATHER }] });
  assert.equal(otool.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(otool.message.tool_calls[0].function.arguments, { city: 'Oslo' });

  // Cohere: whole, SSE stream, a tool call.
  const { CohereClientV2 } = await import('cohere-ai');
  const cohere = new CohereClientV2({ token: 'unused', environment: base, maxRetries: 0 });
  const co = await cohere.chat({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'hello' }] });
  assert.equal(co.message.content[0].text, TEXT);
  let cstream = '';
  for await (const e of await cohere.chatStream({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'hello' }] })) {
    if (e.type === 'content-delta') cstream += e.delta.message.content.text;
  }
  assert.equal(cstream, TEXT);
  const ctool = await cohere.chat({ model: 'command-a-03-2025', messages: [{ role: 'user', content: WEATHER }] });
  assert.deepEqual(JSON.parse(ctool.message.toolCalls[0].function.arguments), { city: 'Oslo' });

  // Bedrock: Converse whole and as frames, InvokeModel whole and as frames.
  const br = await import('@aws-sdk/client-bedrock-runtime');
  const { NodeHttpHandler } = await import('@smithy/node-http-handler');
  const bedrock = new br.BedrockRuntimeClient({ region: 'us-east-1', endpoint: base, requestHandler: new NodeHttpHandler(), maxAttempts: 1,
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const modelId = 'anthropic.claude-3-5-haiku-20241022-v1:0';
  const conv = await bedrock.send(new br.ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'hello' }] }] }));
  assert.equal(conv.output.message.content[0].text, TEXT);
  assert.equal(conv.usage.outputTokens, 6);
  let bstream = '';
  const cs = await bedrock.send(new br.ConverseStreamCommand({ modelId, messages: [{ role: 'user', content: [{ text: 'hello' }] }] }));
  for await (const e of cs.stream) bstream += e.contentBlockDelta?.delta?.text ?? '';
  assert.equal(bstream, TEXT);
  const btool = await bedrock.send(new br.ConverseCommand({ modelId, messages: [{ role: 'user', content: [{ text: WEATHER }] }] }));
  assert.deepEqual(btool.output.message.content.find((b) => b.toolUse).toolUse.input, { city: 'Oslo' });
  const body = JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
  const inv = await bedrock.send(new br.InvokeModelCommand({ modelId, body }));
  assert.equal(JSON.parse(new TextDecoder().decode(inv.body)).content[0].text, TEXT);
  let istream = '';
  const is = await bedrock.send(new br.InvokeModelWithResponseStreamCommand({ modelId, body }));
  for await (const e of is.body) {
    const ev = JSON.parse(new TextDecoder().decode(e.chunk.bytes));
    if (ev.type === 'content_block_delta') istream += ev.delta.text;
  }
  assert.equal(istream, TEXT);

  assert.equal(await server.stop(), 0, server.stderr());
  // Each call is an exchange of the trace, answered by the rule or the
  // default, with the canonical model.
  const { events } = await traceOf(server);
  const exchanges = events.filter((e) => e.kind === 'exchange');
  // 3 calls each over Azure, Vertex, Ollama and Cohere, 5 over Bedrock.
  assert.equal(exchanges.length, 17, JSON.stringify(exchanges.map((e) => e.attributes)));
  assert.deepEqual(exchanges.map((e) => e.attributes['understudy.answer.source']).filter((s) => s === 'rule').length, 5);
  const models = new Set(exchanges.map((e) => e.request?.model));
  for (const m of ['gpt-4o', 'gemini-2.5-flash', 'llama3.2:3b', 'command-a-03-2025', modelId]) assert.ok(models.has(m), `${m} in ${[...models]}`);
});

test('scripted answers are the same bytes from two server processes, whole and streamed, in every new API\'s shape', { timeout: 60000 }, async (t) => {
  const dir = tempDir(t, 'understudy-node22-scripted-bytes-');
  const rules = path.join(FIXTURES, 'scripted_rules.yaml');
  const calls = [
    ['/openai/deployments/d/chat/completions?api-version=2024-10-21', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }],
    ['/openai/deployments/d/chat/completions?api-version=2024-10-21', { model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: WEATHER }] }],
    ['/v1/publishers/google/models/g:generateContent', { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] }],
    ['/v1/publishers/google/models/g:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: WEATHER }] }] }],
    ['/api/chat', { model: 'llama3.2:3b', stream: false, messages: [{ role: 'user', content: 'hello' }] }],
    ['/api/chat', { model: 'llama3.2:3b', messages: [{ role: 'user', content: WEATHER }] }],
    ['/api/generate', { model: 'llama3.2:3b', prompt: 'hello' }],
    ['/v2/chat', { model: 'command-a-03-2025', messages: [{ role: 'user', content: 'hello' }] }],
    ['/v2/chat', { model: 'command-a-03-2025', stream: true, messages: [{ role: 'user', content: WEATHER }] }],
    ['/model/m/converse', { messages: [{ role: 'user', content: [{ text: WEATHER }] }] }],
    ['/model/m/converse-stream', { messages: [{ role: 'user', content: [{ text: 'hello' }] }] }],
    ['/model/m/invoke-with-response-stream', { anthropic_version: 'bedrock-2023-05-31', max_tokens: 9, messages: [{ role: 'user', content: 'hello' }] }],
  ];
  const answers = [];
  for (const name of ['first', 'second']) {
    const server = await Server.start(t, dir, { name, db: `${name}.db`, args: ['--mode', 'replay', '--scenario', rules] });
    const got = [];
    for (const [route, body] of calls) {
      const res = await fetch(`${server.http}/run/${server.run}${route}`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(15000),
      });
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.equal(res.status, 200, `${route}: ${bytes}`);
      got.push({ route, type: res.headers.get('content-type'), bytes: bytes.toString('base64') });
    }
    assert.equal(await server.stop(), 0, server.stderr());
    answers.push(got);
  }
  assert.deepEqual(answers[1], answers[0], 'the same bytes from both processes');
  assert.deepEqual([...new Set(answers[0].map((a) => a.type.split(';')[0]))].sort(),
    ['application/json', 'application/vnd.amazon.eventstream', 'application/x-ndjson', 'text/event-stream']);
});
