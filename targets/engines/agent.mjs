// The agent both durable engines run, one piece per durable step: the
// ledger's tools over MCP (Streamable HTTP at LEDGER_MCP_URL, the official
// TypeScript SDK's client), the model over Chat Completions, not streamed
// (OPENAI_BASE_URL and OPENAI_API_KEY, as any OpenAI client reads them). Each
// function is one unit a durable engine checkpoints: listTools and callTool
// each open an MCP session of their own, so a replayed step repeats exactly
// what its first run sent.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// prompt is the task the user gives the agent.
export const prompt = 'Record the entry alpha in the ledger, then reply done.';

// system is the agent's instructions.
const system = 'You keep the ledger. Use the tools to do what the user asks, then answer briefly.';

// withLedger runs fn with an MCP client connected to the ledger, and closes it.
async function withLedger(fn) {
  const client = new Client({ name: 'replaycheck-engine-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.env.LEDGER_MCP_URL)));
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

// listTools returns the ledger's tools as Chat Completions function tools.
export async function listTools() {
  return withLedger(async (client) => {
    const { tools } = await client.listTools();
    return tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description ?? '', parameters: t.inputSchema },
    }));
  });
}

// callTool runs one tool call the model asked for and returns its result as
// the text of a tool message; a tool error is text the model reads.
export async function callTool(call) {
  return withLedger(async (client) => {
    const res = await client.callTool({ name: call.function.name, arguments: JSON.parse(call.function.arguments || '{}') });
    const text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    return res.isError ? `error: ${text}` : text;
  });
}

// ask sends the conversation to the model and returns its message; a
// non-2xx answer is an error naming the status.
export async function ask(messages, tools) {
  const base = (process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/$/, '');
  const res = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ''}` },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages, tools }),
  });
  if (!res.ok) {
    throw new Error(`model API answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
  }
  return (await res.json()).choices[0].message;
}

// firstMessages is the conversation the agent starts with.
export function firstMessages() {
  return [
    { role: 'system', content: system },
    { role: 'user', content: prompt },
  ];
}
