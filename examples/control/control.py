"""Drive `replaycheck serve` from a Python test: add a fault, run your agent, read what it did.

Plain HTTP (standard library only). Start the fakes first:
    replaycheck serve
then run:  python3 control.py   (REPLAYCHECK_URL defaults to http://127.0.0.1:8765; with
serve --control-key, set REPLAYCHECK_CONTROL_KEY too). The API is described by
$REPLAYCHECK_URL/_replaycheck/openapi.yaml.
"""
import json
import os
import urllib.request

BASE = os.environ.get("REPLAYCHECK_URL", "http://127.0.0.1:8765")
KEY = os.environ.get("REPLAYCHECK_CONTROL_KEY", "")


def control(method, path, body=None):
    req = urllib.request.Request(BASE + "/_replaycheck/" + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if KEY:
        req.add_header("Authorization", "Bearer " + KEY)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


control("POST", "reset")
# POST adds a fault next to those armed already and answers it with its id.
added = control("POST", "faults", {"upstream": [{"on": "follow_up", "respond": {"status": 500}, "times": "once"}]})
fault_id = added["faults"][0]["id"]

# Your agent runs here, against BASE + "/v1" and the ledger at http://127.0.0.1:8766/mcp.
# This example stands in for it with one follow-up model call, which gets the armed 500.
followup = {"model": "m", "messages": [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                          "function": {"name": "commit_write", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
req = urllib.request.Request(BASE + "/v1/chat/completions", data=json.dumps(followup).encode(),
                             headers={"Content-Type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=10)
except urllib.error.HTTPError as e:
    print("model call:", e.code)

fault = control("GET", "faults/" + fault_id)
print("fault", fault_id, "matched:", fault["matched"], "fired:", fault["fired"])
control("DELETE", "faults/" + fault_id)  # disarm it; the counts stay

total = control("GET", "counts")["total"]
print("follow-ups:", total["upstream"]["follow_up"], "injected 500s:", total["upstream"]["outcomes"].get("follow_up injected_500", 0),
      "writes:", total["mcp"]["writes"])
