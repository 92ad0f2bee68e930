#!/usr/bin/env bash
# deploy/kubernetes/run.sh: run one sharded llmbench benchmark on a cluster and merge it.
#
# Usage: deploy/kubernetes/run.sh SHARDS TARGET_URL [llmbench run flags...]
#   e.g. deploy/kubernetes/run.sh 4 http://vllm.default.svc:8000 --rate 200 --duration 5m --output-tokens 256
# Environment:
#   IMAGE     image with the llmbench binary (default ghcr.io/llmbench/llmbench:latest; see Dockerfile)
#   LEAD      seconds from now to --start-at (default 120: room to pull the image and schedule)
#   RUN_ID    name of the run (default: the UTC time)
#   NAMESPACE kubectl namespace (default: the current context's)
# Needs pvc.yaml applied once (a ReadWriteMany volume named llmbench-results).
set -euo pipefail
cd "$(dirname "$0")"
[ $# -ge 2 ] || { sed -n '4,11p' "$0" >&2; exit 2; }
shards=$1 target=$2
shift 2
image=${IMAGE:-ghcr.io/llmbench/llmbench:latest}
lead=${LEAD:-120}
run_id=${RUN_ID:-$(date -u +%Y%m%dt%H%M%Sz)}
ns=()
[ -n "${NAMESPACE:-}" ] && ns=(-n "$NAMESPACE")
# Whole seconds, UTC: every pod parses the same instant.
start_at=$(date -u -d "@$(($(date +%s) + lead))" +%Y-%m-%dT%H:%M:%SZ)

# The run flags go into a sed replacement and a YAML string: escape what sed would read.
args=$(printf '%s' "$*" | sed 's/[&|\\]/\\&/g')
case $args in *'"'*) echo "run flags must not contain double quotes" >&2; exit 2 ;; esac

render() {
	sed -e "s|@RUN_ID@|$run_id|g" -e "s|@SHARDS@|$shards|g" -e "s|@IMAGE@|$image|g" \
		-e "s|@TARGET_URL@|$target|g" -e "s|@START_AT@|$start_at|g" -e "s|@LLMBENCH_ARGS@|$args|g" "$1"
}

echo "run $run_id: $shards shards against $target from $start_at" >&2
render job.yaml | kubectl "${ns[@]}" apply -f -
kubectl "${ns[@]}" wait --for=condition=complete --timeout=24h "job/llmbench-$run_id" &
ok=$!
kubectl "${ns[@]}" wait --for=condition=failed --timeout=24h "job/llmbench-$run_id" &
bad=$!
wait -n "$ok" "$bad" || true
if ! kubectl "${ns[@]}" get "job/llmbench-$run_id" -o jsonpath='{.status.succeeded}' | grep -qx "$shards"; then
	kill "$ok" "$bad" 2>/dev/null || true
	echo "a shard failed: kubectl ${ns[*]} logs -l run=$run_id --prefix" >&2
	exit 1
fi
kill "$ok" "$bad" 2>/dev/null || true

render merge-job.yaml | kubectl "${ns[@]}" apply -f -
kubectl "${ns[@]}" wait --for=condition=complete --timeout=1h "job/llmbench-merge-$run_id"
kubectl "${ns[@]}" logs "job/llmbench-merge-$run_id"
echo "merged results: /results/$run_id/merged on the llmbench-results volume" >&2
