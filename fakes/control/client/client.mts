// A typed client of the control API: control.d.ts is generated from ../openapi.yaml by openapi-typescript
// (npx openapi-typescript ../openapi.yaml -o control.d.ts), and openapi-fetch checks every call against it at
// compile time. TestGeneratedClient generates it, compiles this file with tsc and runs it against serve.
import createClient from "openapi-fetch";
import type { components, paths } from "./control.js";

type ArmedFault = components["schemas"]["ArmedFault"];

const key = process.env.REPLAYCHECK_CONTROL_KEY ?? "";
const client = createClient<paths>({
  baseUrl: process.env.REPLAYCHECK_URL ?? "http://127.0.0.1:8765",
  headers: key ? { Authorization: `Bearer ${key}` } : {},
});

const added = await client.POST("/_replaycheck/faults", {
  body: { upstream: [{ on: "initial", respond: { status: 429 }, times: "once" }] },
});
if (added.error || added.response.status !== 201) throw new Error(`adding a fault: ${added.response.status}`);
const fault: ArmedFault = added.data.faults[0];

const listed = await client.GET("/_replaycheck/faults", { params: { query: { run: "" } } });
if (!listed.data) throw new Error(`listing faults: ${listed.response.status}`);
console.log("armed:", listed.data.faults.map((f) => `${f.id} matched ${f.matched} fired ${f.fired}`).join(", "));

const removed = await client.DELETE("/_replaycheck/faults/{id}", { params: { path: { id: fault.id } } });
if (!removed.data) throw new Error(`deleting ${fault.id}: ${removed.response.status}`);
const gone = await client.GET("/_replaycheck/faults/{id}", { params: { path: { id: fault.id } } });
console.log("deleted:", removed.data.id, "then GET:", gone.response.status, gone.error?.error ?? "");
