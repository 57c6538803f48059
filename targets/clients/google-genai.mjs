// An agent on Google's own JavaScript SDK, @google/genai, the way its README
// shows MCP support: an MCP client (@modelcontextprotocol/sdk) connected over
// Streamable HTTP to the ledger, the SDK's mcpToTool(client) in config.tools,
// and the SDK's automatic function calling running the tool loop inside
// ai.models.generateContent (POST
// {base}/v1beta/models/gemini-2.5-flash:generateContent), or with --stream
// inside ai.models.generateContentStream (POST
// …:streamGenerateContent?alt=sse). GoogleGenAI is built with no options, so
// the SDK reads its own environment: GEMINI_API_KEY (or GOOGLE_API_KEY) and
// GOOGLE_GEMINI_BASE_URL (default Google's); retries are the SDK's as they
// ship (no httpOptions.retryOptions: none). LEDGER_MCP_URL is the program's
// own setting. It prints the model's answer on stdout; an error ends it
// with the SDK's error on stderr and exit 1.
import { GoogleGenAI, mcpToTool } from '@google/genai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const stream = process.argv.slice(2).includes('--stream');
const mcpClient = new Client({ name: 'replaycheck-google-genai', version: '1.0.0' });
await mcpClient.connect(
  new StreamableHTTPClientTransport(new URL(process.env.LEDGER_MCP_URL ?? 'http://127.0.0.1:8766/mcp')),
);
const ai = new GoogleGenAI({});
const request = {
  model: 'gemini-2.5-flash',
  contents: 'Record the entry alpha in the ledger, then reply done.',
  config: {
    systemInstruction: 'You keep the ledger. Use the tools to do what the user asks, then answer briefly.',
    tools: [mcpToTool(mcpClient)],
  },
};
try {
  if (stream) {
    for await (const chunk of await ai.models.generateContentStream(request)) {
      for (const part of chunk.candidates?.[0]?.content?.parts ?? []) {
        if (part.text) process.stdout.write(part.text);
      }
    }
    process.stdout.write('\n');
  } else {
    const response = await ai.models.generateContent(request);
    console.log(response.text);
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await mcpClient.close();
}
