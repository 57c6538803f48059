// An agent as a DBOS Transact workflow (npm @dbos-inc/dbos-sdk): each model
// call and each MCP tool call is a DBOS step, checkpointed in the system
// database (PostgreSQL) once it returns; on a start after a crash DBOS
// recovers the pending workflow and runs again every step whose output was
// not checkpointed. The system database is one per run, named after the
// run's directory, on the PostgreSQL server at the unix socket directory
// PGHOST (user PGUSER, default postgres); DBOS creates it.
//
//   node dbos-agent.mjs           start the workflow, print its answer
//   node dbos-agent.mjs --resume  launch DBOS (which recovers the killed
//                                 workflow), wait for it, print its answer
//
// Either way it prints on stderr the steps DBOS checkpointed, as
// "dbos steps: NAME=N …", the engine's own count to set beside the ledger's.
import path from 'node:path';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { ask, callTool, firstMessages, listTools } from './agent.mjs';

const workflowID = 'replaycheck-agent';

// database is the run's system database name: its directory's name, as an
// identifier.
function database() {
  const run = path.basename(process.env.REPLAYCHECK_RUN_DIR ?? 'local');
  return `dbos_${run.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
}

const agent = DBOS.registerWorkflow(
  async () => {
    const tools = await DBOS.runStep(listTools, { name: 'list_tools' });
    const messages = firstMessages();
    for (let turn = 0; turn < 5; turn++) {
      const msg = await DBOS.runStep(() => ask(messages, tools), { name: 'ask_model' });
      messages.push(msg);
      if (!msg.tool_calls?.length) {
        return msg.content ?? '';
      }
      for (const call of msg.tool_calls) {
        const content = await DBOS.runStep(() => callTool(call), { name: call.function.name });
        messages.push({ role: 'tool', tool_call_id: call.id, content });
      }
    }
    throw new Error('no final answer after 5 model turns');
  },
  { name: 'agent' },
);

const host = encodeURIComponent(process.env.PGHOST ?? '/var/run/postgresql');
const user = process.env.PGUSER ?? 'postgres';
DBOS.setConfig({
  name: 'replaycheck-agent',
  systemDatabaseUrl: `postgresql://${user}@localhost/${database()}?host=${host}`,
  logLevel: 'warn',
});
await DBOS.launch();
try {
  const resume = process.argv.includes('--resume');
  const known = resume ? await DBOS.getWorkflowStatus(workflowID) : null;
  const handle = known ? DBOS.retrieveWorkflow(workflowID) : await DBOS.startWorkflow(agent, { workflowID })();
  const answer = await handle.getResult();
  const steps = {};
  for (const s of (await DBOS.listWorkflowSteps(workflowID)) ?? []) {
    steps[s.name] = (steps[s.name] ?? 0) + 1;
  }
  console.error(`dbos steps: ${Object.entries(steps).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  console.log(answer);
} finally {
  await DBOS.shutdown();
}
