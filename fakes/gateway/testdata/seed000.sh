#!/bin/bash
# The seed 000 procedure, verbatim where possible, against replaycheck serve + replaycheck gateway.
# usage: RC=./bin/replaycheck fakes/gateway/testdata/seed000.sh naive|guarded
# Runs replaycheck serve (ports 18765, 18766) and replaycheck gateway (14000) and
# prints the seed's tables: statuses, error bodies, wc -l of the ledger and
# sort upstream.log | uniq -c. Needs curl and jq.
set -u
MODE=$1
RC=${RC:-replaycheck}
# A relative path (./bin/replaycheck) is taken from where the script was
# started, before it moves into its scratch directory.
case $RC in */*) RC=$(cd "$(dirname "$RC")" && pwd)/$(basename "$RC") ;; esac
D=$(mktemp -d)
# The scratch directory goes with the script, and so do the processes it started.
trap 'kill ${GWPID:-} ${SERVE:-} 2>/dev/null; rm -rf "$D"' EXIT
cd "$D"
export LITELLM_MASTER_KEY=sk-seed-run
UP=18765; MCP=18766; GW=14000
# The ports are fixed, as in the seed: refuse to run next to anything already
# answering on them (another run of this script would mix its counts into ours).
for url in http://127.0.0.1:$UP/ http://127.0.0.1:$MCP/ http://localhost:$GW/ http://127.0.0.1:$GW/; do
  if curl -s -o /dev/null --max-time 2 "$url"; then echo "seed000.sh: something already answers on $url; stop it first" >&2; exit 1; fi
done
$RC serve --ledger ledger.txt --upstream-log upstream.log --flags-dir . --upstream-addr 127.0.0.1:$UP --mcp-addr 127.0.0.1:$MCP > serve.out 2>&1 &
SERVE=$!
start_gw() { REPLAYCHECK_MASTER_KEY=$LITELLM_MASTER_KEY $RC gateway --addr 127.0.0.1:$GW --upstream http://127.0.0.1:$UP/v1 --mcp http://127.0.0.1:$MCP/mcp --mode $MODE "$@" > gw.out 2>&1 & GWPID=$!; for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$GW/health && break; sleep 0.05; done
  kill -0 $GWPID 2>/dev/null || { echo "seed000.sh: the gateway did not start:" >&2; cat gw.out >&2; kill -INT $SERVE; exit 1; }; }
stop_gw() { kill -INT $GWPID; wait $GWPID; echo "gateway exit: $?"; }
for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$UP/v1/models && break; sleep 0.05; done
kill -0 $SERVE 2>/dev/null || { echo "seed000.sh: replaycheck serve did not start:" >&2; cat serve.out >&2; exit 1; }
TOOLS='[{"type":"mcp","server_label":"ledger","server_url":"litellm_proxy","require_approval":"never"}]'
ASK='Call the commit_write tool exactly once with entry alpha, then reply done.'
CHAT="{\"model\":\"repro-model\",\"messages\":[{\"role\":\"user\",\"content\":\"$ASK\"}],\"tools\":$TOOLS}"
RESP="{\"model\":\"repro-model\",\"input\":\"$ASK\",\"tools\":$TOOLS}"
MSGS="{\"model\":\"repro-model\",\"max_tokens\":1024,\"messages\":[{\"role\":\"user\",\"content\":\"$ASK\"}],\"tools\":$TOOLS}"
BLOCK='"guardrails":["block-mcp"],'
post() { curl -s -o body.json -w 'HTTP %{http_code}\n' "http://localhost:$GW$1" \
  -H "Authorization: Bearer $LITELLM_MASTER_KEY" -H 'Content-Type: application/json' -d "$2"; }
start_gw
for pair in "/v1/chat/completions|$CHAT" "/v1/responses|$RESP" "/v1/messages|$MSGS"; do
  echo "== ${pair%%|*} (fault_on)"
  : > ledger.txt; : > upstream.log; touch fault_on
  post "${pair%%|*}" "${pair#*|}"
  jq -c '.error | {message, code}' body.json
  echo "wc -l: $(wc -l < ledger.txt)"; sort upstream.log | uniq -c
done
echo "== guardrail, fault_once"
rm fault_on; : > ledger.txt; : > upstream.log
for pair in "/v1/chat/completions|$CHAT" "/v1/responses|$RESP" "/v1/messages|$MSGS"; do touch fault_once; post "${pair%%|*}" "{$BLOCK${pair#*|\{}"; done
echo "wc -l: $(wc -l < ledger.txt)"; sort upstream.log | uniq -c
echo "== no fault"
rm -f fault_on fault_once; : > ledger.txt; : > upstream.log
post /v1/chat/completions "$CHAT"; post /v1/responses "$RESP"; post /v1/messages "$MSGS"
echo "wc -l: $(wc -l < ledger.txt)"; sort upstream.log | uniq -c
stop_gw
echo "== streaming with fallback, drop_stream"
start_gw --fallback repro-model=backup-model
rm -f fault_on fault_once; : > ledger.txt; : > upstream.log; touch drop_stream
STREAM="{\"stream\":true,${CHAT#\{}"
curl -sN -o stream.txt http://localhost:$GW/v1/chat/completions -H "Authorization: Bearer $LITELLM_MASTER_KEY" -H 'Content-Type: application/json' -d "$STREAM"
grep -c '^data: {"id"' stream.txt
grep '^data: {"error"' stream.txt | cut -c1-150
echo "wc -l: $(wc -l < ledger.txt)"; sort upstream.log | uniq -c
stop_gw
kill -INT $SERVE; wait $SERVE
echo "--- gateway banner:"; head -8 gw.out
