#!/usr/bin/env bash
# Runs replaycheck for the GitHub Action (action.yml) with the action's
# inputs (INPUT_COMMAND, INPUT_TARGETS, INPUT_SCENARIOS, INPUT_SHARD,
# INPUT_BASELINE, INPUT_ARGS, INPUT_REPORT_DIR, INPUT_ARTIFACT_NAME): writes
# junit.xml, report.json, report.html and summary.md into the report
# directory (matrix: report.json, report.html and summary.md, the targets
# as its agents), appends the summary to $GITHUB_STEP_SUMMARY and sets the step's
# outputs exit-code, report-dir, junit and artifact-name. It exits 0 whatever
# replaycheck's exit code, so that the reports are uploaded first; the
# action's last step fails the job by exit-code.
set -euo pipefail

cmd="${INPUT_COMMAND:-run}"
case "$cmd" in
  run | explore | matrix) ;;
  *) echo "::error title=replaycheck::command: '$cmd'; want run, explore or matrix"; exit 2 ;;
esac
dir="${INPUT_REPORT_DIR:-replaycheck-report}"
mkdir -p "$dir"

args=("$cmd")
while IFS= read -r line; do
  line="$(echo "$line" | xargs)" # trim
  if [ -z "$line" ]; then
    continue
  elif [ "$cmd" = matrix ]; then
    args+=("$line")
  else
    args+=(--target "$line")
  fi
done <<<"${INPUT_TARGETS:-}"
if [ "$cmd" = matrix ] && [ -n "$(echo "${INPUT_SCENARIOS:-}" | xargs)" ]; then
  echo "::error title=replaycheck::scenarios: a matrix sweeps each target's own bases; give none with command matrix"
  exit 2
fi
if [ -n "${INPUT_SHARD:-}" ]; then
  args+=(--shard "$INPUT_SHARD")
fi
if [ -n "${INPUT_BASELINE:-}" ]; then
  if [ "$cmd" != run ]; then
    echo "::error title=replaycheck::baseline works with command run only, not $cmd"
    exit 2
  fi
  args+=(--baseline "$INPUT_BASELINE")
fi
junit="$dir/junit.xml"
if [ "$cmd" = matrix ]; then
  junit=""
  args+=(--json "$dir/report.json" --html "$dir/report.html" --markdown "$dir/summary.md")
else
  args+=(--junit "$junit" --json "$dir/report.json" --html "$dir/report.html" --markdown "$dir/summary.md")
fi
read -r -a extra <<<"${INPUT_ARGS:-}"
args+=("${extra[@]}")
while IFS= read -r line; do
  line="$(echo "$line" | xargs)"
  [ -n "$line" ] && args+=("$line")
done <<<"${INPUT_SCENARIOS:-}"

echo "replaycheck ${args[*]}"
set +e
replaycheck "${args[@]}"
code=$?
set -e

if [ -f "$dir/summary.md" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$dir/summary.md" >>"$GITHUB_STEP_SUMMARY"
fi

name="${INPUT_ARTIFACT_NAME:-}"
if [ -z "$name" ]; then
  name=replaycheck-report
  if [ -n "${INPUT_SHARD:-}" ]; then
    name="$name-shard-${INPUT_SHARD/\//-of-}"
  fi
elif [ "$name" = none ]; then
  name=""
fi

{
  echo "exit-code=$code"
  echo "report-dir=$dir"
  echo "junit=$junit"
  echo "artifact-name=$name"
} >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
