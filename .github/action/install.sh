#!/usr/bin/env bash
# Installs replaycheck for the GitHub Action (action.yml) into
# $RUNNER_TEMP/replaycheck-bin and adds that directory to $GITHUB_PATH:
#   INPUT_BINARY   a binary already on the runner: copied;
#   INPUT_VERSION  a release (v1.2.3): its archive for this runner's OS and
#                  architecture is downloaded from the GitHub release
#                  ($REPLAYCHECK_RELEASES, default the project's releases) and
#                  checked against the release's checksums.txt;
#   INPUT_REF      otherwise: go install …/cmd/replaycheck@REF (needs Go).
set -euo pipefail

dir="${RUNNER_TEMP:?RUNNER_TEMP is not set}/replaycheck-bin"
mkdir -p "$dir"
exe=replaycheck
[ "${RUNNER_OS:-}" = Windows ] && exe=replaycheck.exe

if [ -n "${INPUT_BINARY:-}" ]; then
  if [ ! -f "$INPUT_BINARY" ] || [ ! -x "$INPUT_BINARY" ]; then
    echo "::error title=replaycheck::binary: $INPUT_BINARY is not an executable file"
    exit 2
  fi
  cp "$INPUT_BINARY" "$dir/$exe"
elif [ -n "${INPUT_VERSION:-}" ]; then
  version="${INPUT_VERSION#v}"
  case "${RUNNER_OS:-Linux}" in
    Linux) os=linux ;; macOS) os=darwin ;; Windows) os=windows ;;
    *) echo "::error title=replaycheck::no release for RUNNER_OS=$RUNNER_OS"; exit 2 ;;
  esac
  case "${RUNNER_ARCH:-X64}" in
    X64) arch=amd64 ;; ARM64) arch=arm64 ;;
    *) echo "::error title=replaycheck::no release for RUNNER_ARCH=$RUNNER_ARCH"; exit 2 ;;
  esac
  ext=tar.gz
  [ "$os" = windows ] && ext=zip
  archive="replaycheck_${version}_${os}_${arch}.${ext}"
  base="${REPLAYCHECK_RELEASES:-https://github.com/replaycheck/replaycheck/releases/download}/v${version}"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  curl -fsSL --retry 3 -o "$work/$archive" "$base/$archive"
  curl -fsSL --retry 3 -o "$work/checksums.txt" "$base/checksums.txt"
  want="$(awk -v f="$archive" '$2 == f { print $1 }' "$work/checksums.txt")"
  if command -v sha256sum >/dev/null; then
    got="$(sha256sum "$work/$archive" | awk '{ print $1 }')"
  else
    got="$(shasum -a 256 "$work/$archive" | awk '{ print $1 }')"
  fi
  if [ -z "$want" ] || [ "$want" != "$got" ]; then
    echo "::error title=replaycheck::$archive: sha256 $got, checksums.txt of v$version says '${want:-nothing}'"
    exit 3
  fi
  if [ "$ext" = zip ]; then
    unzip -q -o "$work/$archive" "$exe" -d "$dir"
  else
    tar -xzf "$work/$archive" -C "$dir" "$exe"
  fi
else
  ref="${INPUT_REF:-}"
  if [ -z "$ref" ]; then
    echo "::error title=replaycheck::give one of the inputs version, ref or binary"
    exit 2
  fi
  GOBIN="$dir" go install "github.com/replaycheck/replaycheck/cmd/replaycheck@$ref"
fi

echo "$dir" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
"$dir/$exe" version
