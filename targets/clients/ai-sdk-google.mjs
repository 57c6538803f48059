// The AI SDK agent of ai-sdk.mjs on Google's Gemini API instead of Chat
// Completions: the ledger's tools from an MCP client over Streamable HTTP,
// streamText on the Google provider (POST
// {baseURL}/models/gemini-2.5-flash:streamGenerateContent?alt=sse) with a
// multi-step tool loop (stopWhen), its own prompt. It reads only what any
// deployment of it would: GOOGLE_GENERATIVE_AI_API_KEY (read by
// @ai-sdk/google itself), and its own settings GOOGLE_GENERATIVE_AI_BASE_URL
// (the provider's baseURL option; default Google's) and LEDGER_MCP_URL.
import { createMCPClient } from '@ai-sdk/mcp';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { stepCountIs, streamText } from 'ai';

const google = createGoogleGenerativeAI({ baseURL: process.env.GOOGLE_GENERATIVE_AI_BASE_URL || undefined });
const mcpClient = await createMCPClient({
  transport: { type: 'http', url: process.env.LEDGER_MCP_URL ?? 'http://127.0.0.1:8766/mcp' },
});
try {
  const result = streamText({
    model: google('gemini-2.5-flash'),
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
