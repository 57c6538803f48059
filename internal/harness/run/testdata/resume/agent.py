"""A tiny client target for resume tests: its first life asks the model
(streamed) and reads the answer, which the harness holds still and kills it
in; its resume (--resume) does as the RESUME variable says: drop reports
success without running the pending call (a lost call), fail reports the
call's outcome unknown and exits 1."""
import json
import os
import sys
import urllib.request

print("pid=%d" % os.getpid(), flush=True)
if "--resume" in sys.argv:
    if os.environ.get("RESUME") == "fail":
        print("the pending tool call's outcome is unknown", file=sys.stderr)
        sys.exit(1)
    print("done")
    sys.exit(0)
body = json.dumps({
    "model": "repro-model",
    "stream": True,
    "messages": [{"role": "user", "content": os.environ["REPLAYCHECK_PROMPT"]}],
    "tools": [{"type": "function", "function": {"name": "commit_write", "parameters": {"type": "object"}}}],
}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
                             headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
with urllib.request.urlopen(req) as resp:
    for line in resp:
        pass
print("stream ended without a kill", file=sys.stderr)
sys.exit(2)
