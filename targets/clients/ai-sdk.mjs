// An agent written like the AI SDK's MCP tools example: the ledger's tools
// from an MCP client over Streamable HTTP, a streamed Chat Completions call
// with a multi-step tool loop (stopWhen), its own prompt. It reads only what
// any deployment of it would: OPENAI_BASE_URL and OPENAI_API_KEY (read by
// @ai-sdk/openai itself) and the MCP server's URL from LEDGER_MCP_URL.
import { createMCPClient } from '@ai-sdk/mcp';
import { openai } from '@ai-sdk/openai';
import { stepCountIs, streamText } from 'ai';

const mcpClient = await createMCPClient({
  transport: { type: 'http', url: process.env.LEDGER_MCP_URL ?? 'http://127.0.0.1:8766/mcp' },
});
try {
  const result = streamText({
    model: openai.chat('gpt-4o-mini'),
    tools: await mcpClient.tools(),
    stopWhen: stepCountIs(5),
    system: 'You keep the ledger. Use the tools to do what the user asks, then answer briefly.',
    prompt: 'Record the entry alpha in the ledger, then reply done.',
    onError({ error }) {
      console.error(error);
      process.exitCode = 1;
    },
  });
  for await (const text of result.textStream) {
    process.stdout.write(text);
  }
  process.stdout.write('\n');
} finally {
  await mcpClient.close();
}
