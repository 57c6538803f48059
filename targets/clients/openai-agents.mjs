// An agent written like the OpenAI Agents SDK's Streamable HTTP MCP example:
// its own instructions and prompt, the SDK's default model settings (the
// Responses API, not streamed), the ledger as an MCP server. It reads only
// what any deployment of it would: OPENAI_BASE_URL and OPENAI_API_KEY (read
// by the SDK itself) and the MCP server's URL from LEDGER_MCP_URL.
import { Agent, MCPServerStreamableHttp, run } from '@openai/agents';

async function main() {
  const ledger = new MCPServerStreamableHttp({
    url: process.env.LEDGER_MCP_URL ?? 'http://127.0.0.1:8766/mcp',
    name: 'ledger',
  });
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
