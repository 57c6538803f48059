// An agent as a Restate workflow (npm @restatedev/restate-sdk), run by a
// Restate server of its own (npm @restatedev/restate-server) whose store is
// in the run's directory: each model call and each MCP tool call is a
// ctx.run step, journaled by the server once it returns; when the server
// starts again on the same store it re-drives the unfinished invocation,
// and the SDK runs again every step whose result was not journaled.
//
//   node restate-agent.mjs   start the server (or restart it on its store),
//                            serve the workflow, submit it (a submission
//                            of a workflow that exists is a no-op), wait for
//                            its output and print it
//
// The server and its APIs listen on unix sockets in the run's directory (no
// port to pick or to collide on); the workflow's endpoint, which the server
// calls over HTTP/2, listens on a loopback port the first life picks and
// every later life takes again (the file restate-agent.port), since the
// server keeps the deployment's address with the invocation. On
// stderr it prints the steps the server journaled, as "restate journal:
// NAME=N …", the engine's own count to set beside the ledger's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import path from 'node:path';
import * as restate from '@restatedev/restate-sdk';
import { ask, callTool, firstMessages, listTools } from './agent.mjs';

const runDir = process.env.REPLAYCHECK_RUN_DIR ?? process.cwd();
const base = path.join(runDir, 'restate');
const node = 'replaycheck';
const adminSock = path.join(base, node, 'admin.sock');
const ingressSock = path.join(base, node, 'ingress.sock');
const portFile = path.join(runDir, 'restate-agent.port');
const workflowKey = 'replaycheck-agent';
const deadline = Date.now() + 60_000;

// once is the steps' retry policy: one attempt, a failure ends the workflow.
const once = { maxRetryAttempts: 1 };

const agent = restate.workflow({
  name: 'agent',
  handlers: {
    run: async (ctx) => {
      const tools = await ctx.run('list_tools', listTools, once);
      const messages = firstMessages();
      for (let turn = 0; turn < 5; turn++) {
        const msg = await ctx.run('ask_model', () => ask(messages, tools), once);
        messages.push(msg);
        if (!msg.tool_calls?.length) {
          return msg.content ?? '';
        }
        for (const call of msg.tool_calls) {
          const content = await ctx.run(call.function.name, () => callTool(call), once);
          messages.push({ role: 'tool', tool_call_id: call.id, content });
        }
      }
      throw new restate.TerminalError('no final answer after 5 model turns');
    },
  },
});

// request sends one HTTP/1.1 request over a unix socket and returns its
// status and body.
function request(socketPath, method, urlPath, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: urlPath, headers: { 'content-type': 'application/json', accept: 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

// ok fails unless res is a 2xx answer, naming what was asked.
function ok(res, what) {
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${what}: restate answered ${res.status}: ${res.text.slice(0, 300)}`);
  }
  return res;
}

// ready waits until the server's admin API answers its health check.
async function ready() {
  for (;;) {
    try {
      if ((await request(adminSock, 'GET', '/health')).status === 200) {
        return;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      throw new Error(`restate-server not ready after 60 s (its log: ${base}.log)`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

fs.mkdirSync(base, { recursive: true });
const log = fs.openSync(`${base}.log`, 'a');
const server = spawn(
  'node_modules/.bin/restate-server',
  ['--no-logo', '--listen-mode', 'unix', '--base-dir', base, '--node-name', node, '--default-num-partitions', '1', '--log-disable-ansi-codes', 'true'],
  { stdio: ['ignore', log, log], env: { ...process.env, RESTATE_DISABLE_TELEMETRY: 'true' } },
);
const serverExit = new Promise((resolve) => server.on('exit', resolve));
const endpoint = http2.createServer(restate.createEndpointHandler({ services: [agent] }));
const port = fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, 'utf8')) : 0;
await new Promise((resolve, reject) => {
  endpoint.once('error', reject);
  endpoint.listen(port, '127.0.0.1', resolve);
});
fs.writeFileSync(portFile, String(endpoint.address().port));
try {
  await ready();
  ok(await request(adminSock, 'POST', '/deployments', { uri: `http://127.0.0.1:${endpoint.address().port}`, force: true }), 'registering the workflow');
  ok(await request(ingressSock, 'POST', `/agent/${workflowKey}/run/send`), 'submitting the workflow');
  const out = ok(await request(ingressSock, 'GET', `/restate/workflow/agent/${workflowKey}/attach`), 'waiting for the workflow');
  const journal = ok(
    await request(adminSock, 'POST', '/query', {
      query: "SELECT j.name AS name, COUNT(*) AS n FROM sys_journal j JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_name = 'agent' AND j.entry_type = 'Command: Run' GROUP BY j.name",
    }),
    'reading the journal',
  );
  const rows = JSON.parse(journal.text).rows ?? [];
  console.error(`restate journal: ${rows.map((r) => `${r.name}=${r.n}`).join(' ')}`);
  console.log(JSON.parse(out.text));
} finally {
  endpoint.close();
  server.kill('SIGTERM');
  await serverExit;
}
