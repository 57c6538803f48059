#!/bin/sh
# release.sh: the scenario schema's $id at a release tag.
#
# The schema's $id is the URL of schemas/scenario.schema.json in the
# repository at a ref: main on the branch, the tag in a release, because a
# release's `replaycheck schema` prints its tag's URL and an editor that
# follows the $id must find that release's schema there.
#
#   scripts/release.sh tag vX.Y.Z
#     tags release vX.Y.Z: an annotated tag on a new commit whose parent is
#     HEAD and whose only change is the schema file as replaycheck X.Y.Z
#     prints it (its $id names the tag). The branch, the index and the work
#     tree are left as they are (main keeps naming main). Then push the tag:
#     git push origin vX.Y.Z, which starts the release workflow.
#   scripts/release.sh check VERSION
#     checks that the schema file is what replaycheck VERSION (as goreleaser
#     stamps it: 1.2.3, or a snapshot's) prints; goreleaser runs it before
#     a release, so a tag not made by `tag` is not released.
set -eu

file=schemas/scenario.schema.json
go=${GO:-go}

# schema VERSION prints the schema replaycheck VERSION prints (-trimpath as
# goreleaser builds, which also keeps the build cache shared across clones).
schema() {
	$go run -trimpath -ldflags "-X main.version=$1" ./cmd/replaycheck schema
}

usage() {
	echo "usage: scripts/release.sh tag vX.Y.Z | check VERSION" >&2
	exit 2
}

[ $# -eq 2 ] || usage
cd "$(git rev-parse --show-toplevel)"

case $1 in
check)
	if ! schema "$2" | cmp -s - "$file"; then
		echo "release.sh: $file is not the schema replaycheck $2 prints: tag a release with scripts/release.sh tag vX.Y.Z (or run go test ./internal/harness/targetfile -update on the branch)" >&2
		exit 1
	fi
	;;
tag)
	version=$2
	if ! printf '%s\n' "$version" | grep -Eqx 'v[0-9]+\.[0-9]+\.[0-9]+'; then
		echo "release.sh: $version is not a release version vX.Y.Z" >&2
		exit 2
	fi
	if git rev-parse -q --verify "refs/tags/$version" >/dev/null; then
		echo "release.sh: tag $version exists" >&2
		exit 1
	fi
	if ! git diff --quiet HEAD -- "$file"; then
		echo "release.sh: $file has changes not committed" >&2
		exit 1
	fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	schema "${version#v}" >"$tmp/schema.json"
	# The tag's file must differ from HEAD's only in the $id.
	sed "s|/main/$file\"|/$version/$file\"|" "$file" >"$tmp/want.json"
	if ! cmp -s "$tmp/want.json" "$tmp/schema.json"; then
		echo "release.sh: $file at HEAD is not current (run go test ./internal/harness/targetfile -update and commit)" >&2
		exit 1
	fi
	blob=$(git hash-object -w "$tmp/schema.json")
	GIT_INDEX_FILE=$tmp/index git read-tree HEAD
	GIT_INDEX_FILE=$tmp/index git update-index --cacheinfo "100644,$blob,$file"
	tree=$(GIT_INDEX_FILE=$tmp/index git write-tree)
	commit=$(git commit-tree "$tree" -p HEAD -m "replaycheck $version: the scenario schema's \$id names the tag")
	git tag -a "$version" -m "replaycheck $version" "$commit"
	echo "tagged $version (commit $commit); push it with: git push origin $version"
	;;
*)
	usage
	;;
esac
