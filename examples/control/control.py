"""Drive `replaycheck serve` from a Python test: arm a fault, run your agent, read the counts.

Plain HTTP (standard library only). Start the fakes first:
    replaycheck serve
then run:  python3 control.py   (REPLAYCHECK_URL defaults to http://127.0.0.1:8765)
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
control("POST", "faults", {"upstream": [{"on": "follow_up", "respond": {"status": 500}, "times": "once"}]})

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

total = control("GET", "counts")["total"]
print("follow-ups:", total["upstream"]["follow_up"], "injected 500s:", total["upstream"]["outcomes"].get("follow_up injected_500", 0),
      "writes:", total["mcp"]["writes"])
