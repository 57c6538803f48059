#!/usr/bin/env bash
# Runs replaycheck for the GitHub Action (action.yml) with the action's
# inputs (INPUT_COMMAND, INPUT_TARGETS, INPUT_SCENARIOS, INPUT_SHARD,
# INPUT_BASELINE, INPUT_REPORTS, INPUT_ARGS, INPUT_REPORT_DIR,
# INPUT_ARTIFACT_NAME): writes junit.xml, report.json, report.html and
# summary.md into the report directory (matrix: report.json, report.html and
# summary.md, the targets as its agents; merge: the reports' JSON joined by
# `replaycheck report merge`, a matrix's parts into one matrix, without
# junit.xml), appends the summary to $GITHUB_STEP_SUMMARY and sets the step's
# outputs exit-code, report-dir, junit, html, artifact-name and failure
# (what the exit code means, for the job's error). It exits 0
# whatever replaycheck's exit code, so that the reports are uploaded first;
# the action's last step fails the job by exit-code.
set -euo pipefail

cmd="${INPUT_COMMAND:-run}"
case "$cmd" in
  run | explore | matrix | merge) ;;
  *) echo "::error title=replaycheck::command: '$cmd'; want run, explore, matrix or merge"; exit 2 ;;
esac
dir="${INPUT_REPORT_DIR:-replaycheck-report}"
mkdir -p "$dir"

# A matrix's JSON names its kind at the top level (matrix.KindMatrix).
is_matrix() { grep -q '^  "kind": "replaycheck-matrix"' "$1"; }

junit="$dir/junit.xml"
if [ "$cmd" = merge ]; then
  for input in INPUT_SCENARIOS INPUT_SHARD INPUT_BASELINE; do
    if [ -n "$(echo "${!input:-}" | xargs)" ]; then
      echo "::error title=replaycheck::${input#INPUT_}: merge joins the reports' JSON (reports); the shard and baseline are in them"
      exit 2
    fi
  done
  args=(report merge)
  while IFS= read -r line; do
    line="$(echo "$line" | xargs)"
    [ -z "$line" ] && continue
    mapfile -t found < <(compgen -G "$line")
    if [ "${#found[@]}" -eq 0 ]; then
      echo "::error title=replaycheck::reports: no file matches $line (did every shard upload its report.json?)"
      exit 2
    fi
    args+=("${found[@]}")
  done <<<"${INPUT_REPORTS:-}"
  if [ "${#args[@]}" -eq 2 ]; then
    echo "::error title=replaycheck::reports: give the JSON reports to merge, one file or pattern per line"
    exit 2
  fi
  if is_matrix "${args[2]}"; then
    junit=""
  fi
else
  if [ "$cmd" = matrix ]; then
    junit=""
  fi
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
fi
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
if [ -z "$junit" ]; then
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
# The table (and --diff's changes) is kept to say what failed.
table="$(mktemp)"
trap 'rm -f "$table"' EXIT
set +e
replaycheck "${args[@]}" | tee "$table"
code=${PIPESTATUS[0]}
set -e

# What the exit code means for the job's error message: with --diff, exit 1
# is a cell that turned DUPLICATE or LOST since the saved matrix, named by
# the diff's lines marked "! ".
old=""
for ((i = 0; i < ${#extra[@]}; i++)); do
  case "${extra[i]}" in
    --diff) old="${extra[i + 1]:-}" ;;
    --diff=*) old="${extra[i]#--diff=}" ;;
  esac
done
mapfile -t worse < <(sed -n 's/^! //p' "$table")
case "$code" in
  0) failure="" ;;
  1)
    if [ -n "$old" ] && [ "${#worse[@]}" -gt 0 ]; then
      printf -v failure '%s; ' "${worse[@]}"
      failure="a cell turned DUPLICATE or LOST since $old: ${failure%; }"
    elif [ "$cmd" = explore ]; then
      failure="a finding (or a base that fails clean)"
    else
      failure="a rule broke"
    fi
    ;;
  2) failure="bad usage or configuration (the log says what)" ;;
  3) failure="the harness or target could not run (the log says why)" ;;
  130) failure="interrupted" ;;
  *) failure="an unknown exit code" ;;
esac
failure="${failure//%/%25}" # the one character a workflow command escapes on one line

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
  echo "html=$dir/report.html"
  echo "artifact-name=$name"
  echo "failure=$failure"
} >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
