// The OpenAI Agents SDK (@openai/agents) against understudy, unmodified: a
// triage agent hands off to a weather or a time specialist, each of which
// calls its function tool and answers. Run over the Responses API and over
// Chat Completions (the SDK's two OpenAI modes), recorded through a fake
// OpenAI and replayed with it closed; the scenario fixtures/agents.yaml
// names the agents by their instructions and answers the weather
// specialist's second model call with a 429 that the openai SDK retries.
// The trace is asserted over gRPC with clients/node (Traces.Assert/Query).
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { connect } from '../../clients/node/index.js';
import { requireBinary } from '../node/lib/harness.js';
import { startFakeOpenAI } from './fakes/openai.js';
import { defaultBrain } from './fakes/brain.js';
import { recordThenReplay } from './lib/journey.js';
import { API_KEY, FIXTURES, agentsSdk, openaiSdk } from './lib/sdk.js';

requireBinary();

const MODEL = 'gpt-4.1-mini';
const SCENARIO = path.join(FIXTURES, 'agents.yaml');
const SEQUENCE = [
  'triage', 'weather_specialist', 'weather_specialist', 'weather_specialist', // the 2nd is the 429, the 3rd its retry
  'triage', 'time_specialist', 'time_specialist',
];

// The model behind the fake, by the agent's instructions: triage hands off
// to the specialist the question names; a specialist calls its own tool
// (arguments from `key=value` words), then answers with what it returned.
function agentBrain(conv) {
  if (/triage/.test(conv.system)) {
    const target = /weather/i.test(conv.lastUserText) ? 'weather' : 'time';
    const handoff = conv.tools.find((t) => t.name.startsWith('transfer_to_') && t.name.includes(target));
    return { text: '', toolCalls: [{ name: handoff.name, arguments: {} }] };
  }
  const own = new Set(conv.tools.map((t) => t.name));
  const result = conv.toolResults.find((r) => own.has(r.name));
  if (result) return { text: `The specialist says: ${result.content}`, toolCalls: [] };
  // The handoff's output is a tool result too; it is not this agent's.
  return defaultBrain({ ...conv, toolResults: [] });
}

// The agents, fresh per phase; their tools log what they were called with.
async function buildAgents(calls) {
  const { Agent, tool } = await agentsSdk();
  const strictObject = (key) => ({ type: 'object', properties: { [key]: { type: 'string' } }, required: [key], additionalProperties: false });
  const getWeather = tool({
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: strictObject('city'),
    strict: true,
    execute: async ({ city }) => {
      calls.push(['get_weather', city]);
      return JSON.stringify({ city, sky: 'sunny', celsius: 21 });
    },
  });
  const getTime = tool({
    name: 'get_time',
    description: 'Local time in a time zone',
    parameters: strictObject('timezone'),
    strict: true,
    execute: async ({ timezone }) => {
      calls.push(['get_time', timezone]);
      return JSON.stringify({ timezone, time: '14:05' });
    },
  });
  const weather = new Agent({ name: 'weather_specialist', instructions: 'You are the weather specialist. Use get_weather.', tools: [getWeather], model: MODEL });
  const time = new Agent({ name: 'time_specialist', instructions: 'You are the time specialist. Use get_time.', tools: [getTime], model: MODEL });
  const triage = Agent.create({ name: 'triage', instructions: 'You are the triage agent. Hand off to the right specialist.', handoffs: [weather, time], model: MODEL });
  return { triage };
}

// What a run gave the caller, as plain data.
function summary(result) {
  return {
    finalOutput: result.finalOutput,
    lastAgent: result.lastAgent.name,
    items: result.newItems.map((i) => `${i.agent?.name ?? '-'}:${i.type}:${i.rawItem?.name ?? i.rawItem?.type ?? ''}`),
    // Ids the fake made up afresh: equal only if replayed.
    responseIds: result.rawResponses.map((r) => r.responseId),
  };
}

for (const api of ['responses', 'chat_completions']) {
  test(`agents (${api}): triage hands off to two specialists with tools; a 429 is retried; replay and trace agree`, { timeout: 60000 }, async (t) => {
    const openai = { upstream: 'openai', startFake: () => startFakeOpenAI({ reply: agentBrain }), args: ['--scenario', SCENARIO] };
    const r = await recordThenReplay(t, openai, async ({ http, phase, fake, server }) => {
      const { OpenAIProvider, Runner } = await agentsSdk();
      const OpenAI = await openaiSdk();
      // The SDK's default retries (2): the 429 is retried, at once
      // (retry-after-ms: 0).
      const client = new OpenAI({ apiKey: API_KEY, baseURL: `${http}/v1`, timeout: 15000 });
      const runner = new Runner({
        modelProvider: new OpenAIProvider({ openAIClient: client, useResponses: api === 'responses' }),
        tracingDisabled: true, // no export to OpenAI's tracing endpoint
      });
      const calls = [];
      const { triage } = await buildAgents(calls);

      const weather = await runner.run(triage, 'What is the weather in city=Paris now?');
      const timeRun = await runner.run(triage, 'What time is it in timezone=Asia/Tokyo now?', { stream: true });
      const streamed = [];
      for await (const e of timeRun) if (e.type === 'run_item_stream_event') streamed.push(e.name);
      await timeRun.completed;

      if (phase === 'record') {
        const path = api === 'responses' ? '/v1/responses' : '/v1/chat/completions';
        assert.deepEqual(fake.requests.map((q) => q.path), Array(6).fill(path), 'six model calls reached the upstream; the 429 did not');
        assert.equal(fake.requests[2].headers['x-stainless-retry-count'], '1', 'the third upstream call is the SDK\'s retry');
        assert.equal(fake.requests[3].body.stream, true, 'the second run streams');
      }

      // The trace, over gRPC, while the run is live.
      const us = connect(server.grpc);
      t.after(() => us.close());
      await us.assertAgentSequence(server.run, SEQUENCE);
      await us.assertToolCalls(server.run, [
        'transfer_to_weather_specialist', { name: 'get_weather', arguments: { city: 'Paris' } },
        'transfer_to_time_specialist', { name: 'get_time', arguments: { timezone: 'Asia/Tokyo' } },
      ]);
      await us.assertToolCalls(server.run, [{ name: 'get_weather', arguments: { city: 'Paris' } }], { agent: 'weather_specialist' });
      await us.assertToolCalls(server.run, ['transfer_to_weather_specialist', 'transfer_to_time_specialist'], { agent: 'triage' });
      await us.assertNoMisses(server.run);
      const exchanges = await us.query(server.run, { kind: 'exchange' });
      const rows = exchanges.map((e) => [e.agent, e.attributes['understudy.agent.iteration'], e.attributes['understudy.rule.name'],
        e.attributes['understudy.action'], e.attributes['error.type'], e.attributes['understudy.answer.source']]);
      const source = phase === 'record' ? 'upstream' : 'recording';
      assert.deepEqual(rows, [
        ['triage', '1', undefined, undefined, undefined, source],
        ['weather_specialist', '1', undefined, undefined, undefined, source],
        ['weather_specialist', '2', 'weather-throttled', 'error', 'RESOURCE_EXHAUSTED', 'rule'],
        ['weather_specialist', '3', undefined, undefined, undefined, source],
        ['triage', '2', undefined, undefined, undefined, source],
        ['time_specialist', '1', undefined, undefined, undefined, source],
        ['time_specialist', '2', undefined, undefined, undefined, source],
      ], `${phase}: the exchanges, in order`);
      assert.equal(exchanges[6].attributes['understudy.streamed'], 'true');

      return { weather: summary(weather), time: summary(timeRun), streamed, calls };
    });

    const { weather, time, streamed, calls } = r.recorded;
    assert.equal(weather.lastAgent, 'weather_specialist');
    assert.match(weather.finalOutput, /^The specialist says: .*"sky":"sunny"/);
    assert.deepEqual(weather.items, [
      'triage:handoff_call_item:transfer_to_weather_specialist',
      '-:handoff_output_item:transfer_to_weather_specialist',
      'weather_specialist:tool_call_item:get_weather',
      'weather_specialist:tool_call_output_item:get_weather',
      'weather_specialist:message_output_item:message',
    ]);
    assert.equal(weather.responseIds.length, 3, 'three model answers (the 429 was retried inside the SDK)');
    assert.equal(time.lastAgent, 'time_specialist');
    assert.match(time.finalOutput, /"time":"14:05"/);
    assert.deepEqual(streamed, ['handoff_requested', 'handoff_occurred', 'tool_called', 'tool_output', 'message_output_created']);
    assert.deepEqual(calls, [['get_weather', 'Paris'], ['get_time', 'Asia/Tokyo']]);

    // The point: the replayed agents did and got exactly the same, the
    // fake's fresh ids included.
    assert.deepEqual(r.replayed, r.recorded);
  });
}
