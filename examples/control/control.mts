// Drive `replaycheck serve` from a TypeScript test: add a fault, run your agent, read what it did.
// Plain HTTP (fetch, Node 18+). Start the fakes first with `replaycheck serve`, then compile (tsc) and run
// this file (REPLAYCHECK_URL defaults to http://127.0.0.1:8765; with serve --control-key, set
// REPLAYCHECK_CONTROL_KEY too). The API is described by $REPLAYCHECK_URL/_replaycheck/openapi.yaml, from
// which a typed client can be generated (see fakes/control/client).

const base: string = process.env.REPLAYCHECK_URL ?? "http://127.0.0.1:8765";
const key: string = process.env.REPLAYCHECK_CONTROL_KEY ?? "";

async function control(method: string, path: string, body?: unknown): Promise<any> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (key) headers["Authorization"] = `Bearer ${key}`;
  const res = await fetch(`${base}/_replaycheck/${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

await control("POST", "reset");
// POST adds a fault next to those armed already and answers it with its id.
const added = await control("POST", "faults", { upstream: [{ on: "follow_up", respond: { status: 500 }, times: "once" }] });
const faultID: string = added.faults[0].id;

// Your agent runs here, against `${base}/v1` and the ledger at http://127.0.0.1:8766/mcp.
// This example stands in for it with one follow-up model call, which gets the armed 500.
const res = await fetch(`${base}/v1/chat/completions`, {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({
    model: "m",
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", tool_calls: [{ id: "c1", type: "function", function: { name: "commit_write", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "ok" },
    ],
  }),
  signal: AbortSignal.timeout(10_000),
});
console.log("model call:", res.status);

const fault = await control("GET", `faults/${faultID}`);
console.log("fault", faultID, "matched:", fault.matched, "fired:", fault.fired);
await control("DELETE", `faults/${faultID}`); // disarm it; the counts stay

const { total } = await control("GET", "counts");
console.log("follow-ups:", total.upstream.follow_up, "injected 500s:", total.upstream.outcomes["follow_up injected_500"] ?? 0,
  "writes:", total.mcp.writes);
