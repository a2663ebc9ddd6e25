// The system under test: an orchestrator / executor / reviewer loop on the
// official openai SDK, pointed at a base URL. It names no agent: understudy
// tells them apart by system prompt (a scenario's `agents:`).
//
//   round 1: orchestrator continue(execute); executor write_file, then
//            continue(review); reviewer objects
//   round 2: orchestrator continue(fix); executor rewrites with the
//            reviewer's feedback, continue(review); reviewer approves
//   round 3: orchestrator continue(done)
import { PROMPTS } from './fake_openai.js';

const CONTINUE = {
  type: 'function',
  function: {
    name: 'continue',
    description: 'Move the workflow to the next phase.',
    parameters: { type: 'object', properties: { phase: { type: 'string' } }, required: ['phase'] },
  },
};

const WRITE_FILE = {
  type: 'function',
  function: {
    name: 'write_file',
    description: 'Write a file of the project.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
};

export const TASK = 'Write login(name), which looks the user up in the database.';

// Resolves { phases, code, feedback, calls }: what the loop saw.
export async function reviewLoop(openai, { model = 'gpt-test', maxRounds = 4 } = {}) {
  let calls = 0;
  const ask = async (agent, messages, tools) => {
    calls += 1;
    const r = await openai.chat.completions.create({
      model,
      messages: [{ role: 'system', content: PROMPTS[agent] }, ...messages],
      ...(tools ? { tools } : {}),
    });
    return r.choices[0].message;
  };
  const phaseOf = (message) => JSON.parse(message.tool_calls[0].function.arguments).phase;

  const phases = [];
  let feedback = '';
  let code = '';
  for (let round = 0; round < maxRounds; round++) {
    const o = await ask('orchestrator', [
      { role: 'user', content: round === 0 ? `Task: ${TASK}` : `The reviewer says: ${feedback}` },
    ], [CONTINUE]);
    phases.push(phaseOf(o));
    if (phases.at(-1) === 'done') break;

    const order = {
      role: 'user',
      content: feedback ? `Fix login.js. The reviewer says: ${feedback}` : `Task: ${TASK}`,
    };
    const w = await ask('executor', [order], [WRITE_FILE, CONTINUE]);
    const write = w.tool_calls[0];
    code = JSON.parse(write.function.arguments).content;
    const h = await ask('executor', [
      order,
      { role: 'assistant', content: w.content, tool_calls: w.tool_calls },
      { role: 'tool', tool_call_id: write.id, content: 'wrote login.js' },
    ], [WRITE_FILE, CONTINUE]);
    phases.push(phaseOf(h));

    const r = await ask('reviewer', [{ role: 'user', content: `Review login.js:\n${code}` }]);
    feedback = r.content;
  }
  return { phases, code, feedback, calls };
}
