#!/usr/bin/env bash
# The Kubernetes step of CI (.ci/run): installs what the cluster needs, builds Kubernetes
# (cached under $LLMBENCH_CACHE) and the images, brings the one-node cluster up, runs test.sh,
# and tears it all down, whatever happened; fails, not skips, when the cluster cannot start.
# Costs, cold and warm: docs/testing.md.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "ci.sh: $(date +%T) $*" >&2; }
s=$SECONDS
"$HERE/cluster.sh" deps
"$HERE/cluster.sh" build >/dev/null
log "Kubernetes binaries ready ($((SECONDS - s)) s)"
# llama.cpp's server for the second target: .ci/llamacpp.sh's build (cached; CI built it
# for the e2e tests already).
LLAMA_SERVER=$("$HERE/../../../.ci/llamacpp.sh" build) "$HERE/images.sh" >/dev/null
log "images built ($((SECONDS - s)) s)"
# A cluster left by an interrupted run goes first.
[ -e /run/netns/llmk8s ] && "$HERE/cluster.sh" down
down() {
	local rc=$?
	if [ $rc -ne 0 ]; then
		log "failed: the last lines of each daemon's log"
		tail -n 20 "${LLMBENCH_K8S_STATE:-${LLMBENCH_CACHE:-$HOME/.cache/llmbench}/k8s-run}"/logs/*.log >&2 || true
	fi
	"$HERE/cluster.sh" down || rc=1
	exit $rc
}
trap down EXIT
"$HERE/cluster.sh" up
log "cluster up ($((SECONDS - s)) s)"
"$HERE/test.sh"
log "passed ($((SECONDS - s)) s)"
