// A two-step tool loop with the official OpenAI SDK and nothing but what the
// environment gives it (OPENAI_BASE_URL; OPENAI_API_KEY, else a placeholder):
// the model asks for `get_weather`, the agent runs it, the model answers.
// Prints the final answer on stdout; returns the exit code (0 answered,
// 1 the model failed, 2 the loop did not end in two steps).
//
//   packaging-agent [--question TEXT]
import { parseArgs } from 'node:util';

import OpenAI from 'openai';

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
    },
  },
];

// The agent's one tool: a fixed table, so that the recorded conversation is
// the same on every run.
function getWeather({ city }) {
  return city === 'Paris' ? '18°C and sunny' : `no weather known for ${city}`;
}

export async function main(argv) {
  const { values } = parseArgs({ args: argv, options: { question: { type: 'string' } } });
  const question = values.question ?? 'What is the weather in Paris?';
  const client = new OpenAI({
    apiKey: process.env.OPENAI_API_KEY ?? 'sk-placeholder',
    maxRetries: 0,
    timeout: 15000,
  });
  const messages = [
    { role: 'system', content: 'You answer with the tools you have.' },
    { role: 'user', content: question },
  ];
  try {
    for (let step = 0; step < 2; ++step) {
      const completion = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages,
        tools: TOOLS,
      });
      const message = completion.choices[0].message;
      messages.push(message);
      if (!message.tool_calls?.length) {
        console.log(message.content);
        return 0;
      }
      for (const call of message.tool_calls) {
        const result = getWeather(JSON.parse(call.function.arguments));
        messages.push({ role: 'tool', tool_call_id: call.id, content: result });
      }
    }
  } catch (e) {
    console.error(`packaging-agent: ${e.status ?? ''} ${e.message}`);
    return 1;
  }
  console.error('packaging-agent: no answer after two steps');
  return 2;
}
