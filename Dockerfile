# The replaycheck image: the static binary and nothing else (no shell, no
# package manager, no CA certificates), running `replaycheck serve` with the
# model API fake on 8765 and the ledger MCP server on 8766/mcp.
#
# The binary is built outside the image and copied in, so the build needs no
# network and no base image to pull:
#
#   make image          # CGO_ENABLED=0 go build, then podman build (or docker build)
#
# goreleaser (dockers_v2 in .goreleaser.yaml) builds it the same way at a
# release, with the binaries it built, one per platform in $TARGETPLATFORM/.
#
# serve listens on 0.0.0.0 in the container, so other containers and the
# host's published ports reach it; listening beyond loopback needs a control
# key: set REPLAYCHECK_CONTROL_KEY (docker run -e REPLAYCHECK_CONTROL_KEY=...)
# and send it as Authorization: Bearer KEY to the control API.
FROM scratch

ARG TARGETPLATFORM
COPY $TARGETPLATFORM/replaycheck /replaycheck

# nobody: serve needs no privilege and writes no file unless told to.
USER 65534:65534
EXPOSE 8765 8766

ENTRYPOINT ["/replaycheck"]
CMD ["serve", "--upstream-addr", "0.0.0.0:8765", "--mcp-addr", "0.0.0.0:8766"]
