// An agent written like the OpenAI Agents SDK's stdio MCP example: the same
// agent as openai-agents.mjs (its own instructions and prompt, the SDK's
// default model settings: the Responses API, not streamed), with the ledger
// as an MCP server it spawns and speaks to over stdio (MCPServerStdio). It
// reads only what any deployment of it would: OPENAI_BASE_URL and
// OPENAI_API_KEY (read by the SDK itself), the server's command line from
// LEDGER_STDIO_COMMAND (a JSON array: the command, then its arguments) and,
// optionally, the tool-call timeout in milliseconds from LEDGER_TOOL_TIMEOUT_MS
// (MCPServerStdio's timeout; the SDK's default is 60000).
import { Agent, MCPServerStdio, run } from '@openai/agents';

async function main() {
  const [command, ...args] = JSON.parse(process.env.LEDGER_STDIO_COMMAND ?? '["replaycheck","ledger-stdio","http://127.0.0.1:8766/mcp"]');
  const timeout = process.env.LEDGER_TOOL_TIMEOUT_MS ? Number(process.env.LEDGER_TOOL_TIMEOUT_MS) : undefined;
  const ledger = new MCPServerStdio({ command, args, name: 'ledger', timeout });
  const agent = new Agent({
    name: 'Ledger clerk',
    instructions: 'You keep the ledger. Use the tools to do what the user asks, then answer briefly.',
    mcpServers: [ledger],
  });
  try {
    await ledger.connect();
    const result = await run(agent, 'Record the entry alpha in the ledger, then reply done.');
    console.log(result.finalOutput);
  } finally {
    await ledger.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
