#!/usr/bin/env bash
# deploy/kubernetes/run.sh: run one sharded llmbench benchmark on a cluster and merge it.
#
# Usage: deploy/kubernetes/run.sh SHARDS TARGET_URL [llmbench run flags...]
#   e.g. deploy/kubernetes/run.sh 4 http://vllm.default.svc:8000 --rate 200 --duration 5m --output-tokens 256
# Environment:
#   IMAGE      image with the llmbench binary (default ghcr.io/llmbench/llmbench:latest; see Dockerfile)
#   LEAD       seconds from now to --start-at (default 120: room to pull the image and schedule)
#   RUN_ID     name of the run: lowercase letters, digits, '-' (default: the UTC time)
#   CPU        each shard pod's CPU, requested and limited (default 2)
#   MEMORY     each shard pod's memory, requested and limited (default 2Gi)
#   NAMESPACE  kubectl namespace (default: the current context's)
#   OVERLAY    keep the kustomization written for the run in this folder (default: a temporary one)
# It writes an overlay of this folder's kustomization with those settings, applies it with
# `kubectl apply -k` (the shards' Job and the merge Job, which waits for them), waits for the
# merge and prints its summary. Needs pvc.yaml applied once (a ReadWriteMany volume named
# llmbench-results).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { sed -n '4,17p' "$0" >&2; exit 2; }
shards=$1 target=$2
shift 2
image=${IMAGE:-ghcr.io/llmbench/llmbench:latest}
lead=${LEAD:-120}
run_id=${RUN_ID:-$(date -u +%Y%m%dt%H%M%Sz)}
ns=()
[ -n "${NAMESPACE:-}" ] && ns=(-n "$NAMESPACE")
case $shards in '' | *[!0-9]* | 0) echo "SHARDS must be a whole number of at least 1, got '$shards'" >&2; exit 2 ;; esac
case $run_id in *[!a-z0-9-]* | -* | *-) echo "RUN_ID must be lowercase letters, digits and '-' (a Job's name), got '$run_id'" >&2; exit 2 ;; esac
case "$*" in *'"'* | *\\*) echo "run flags must not contain double quotes or backslashes (the pods split them at spaces)" >&2; exit 2 ;; esac
# Whole seconds, UTC: every pod parses the same instant.
start_at=$(date -u -d "@$(($(date +%s) + lead))" +%Y-%m-%dT%H:%M:%SZ)

# The image's name and its tag or digest, as kustomize's images entry takes them.
name=$image tag=latest digest=
case $image in
*@*) name=${image%@*} digest=${image#*@} ;;
*) [[ ${image##*/} == *:* ]] && name=${image%:*} tag=${image##*:} ;;
esac

overlay=${OVERLAY:-$(mktemp -d)}
[ -n "${OVERLAY:-}" ] || trap 'rm -rf "$overlay"' EXIT
mkdir -p "$overlay"
ln -sfn "$here" "$overlay/base"
{
	echo "# llmbench run $run_id: deploy/kubernetes/run.sh $shards $target $*"
	echo "resources: [base]"
	echo "components: [base/settings]"
	echo "images:"
	echo "  - name: ghcr.io/llmbench/llmbench # the base's image"
	echo "    newName: \"$name\""
	if [ -n "$digest" ]; then echo "    digest: \"$digest\""; else echo "    newTag: \"$tag\""; fi
	echo "configMapGenerator:"
	echo "  - name: llmbench-run"
	echo "    behavior: merge"
	echo "    literals:"
	for kv in "RUN_ID=$run_id" "TARGET_URL=$target" "SHARDS=$shards" "START_AT=$start_at" "LLMBENCH_ARGS=$*" \
		"CPU=${CPU:-2}" "MEMORY=${MEMORY:-2Gi}"; do
		echo "      - \"$kv\""
	done
} >"$overlay/kustomization.yaml"

echo "run $run_id: $shards shards against $target from $start_at" >&2
kubectl "${ns[@]}" apply -k "$overlay"
# The shards fail the run at once (backoffLimit 0); the merge ends it either way.
while :; do
	failed=$(kubectl "${ns[@]}" get "job/llmbench-shards-$run_id" -o jsonpath='{.status.failed}')
	if [ -n "$failed" ] && [ "$failed" != 0 ]; then
		echo "a shard failed: kubectl ${ns[*]} logs -l batch.kubernetes.io/job-name=llmbench-shards-$run_id --prefix" >&2
		kubectl "${ns[@]}" logs -l "batch.kubernetes.io/job-name=llmbench-shards-$run_id" --prefix --tail 20 >&2 || true
		exit 1
	fi
	done_shards=$(kubectl "${ns[@]}" get "job/llmbench-shards-$run_id" -o jsonpath='{.status.succeeded}')
	merge=$(kubectl "${ns[@]}" get "job/llmbench-merge-$run_id" -o jsonpath='{.status.succeeded}/{.status.failed}')
	case $merge in
	1/*) [ "${done_shards:-0}" = "$shards" ] && break ;;
	*/[1-9]*)
		echo "the merge failed:" >&2
		kubectl "${ns[@]}" logs "job/llmbench-merge-$run_id" >&2 || true
		exit 1
		;;
	esac
	sleep 2
done
kubectl "${ns[@]}" logs "job/llmbench-merge-$run_id"
echo "results: /results/$run_id on the llmbench-results volume (merged/ and shard-*/)" >&2
