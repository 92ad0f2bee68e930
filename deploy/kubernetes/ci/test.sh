#!/usr/bin/env bash
# The sharded runs on the CI cluster (cluster.sh up first), through the manifests a user
# applies: deploy/kubernetes/target (llmbench serve, a Deployment behind a Service) and
# deploy/kubernetes/run.sh (kubectl apply -k of deploy/kubernetes: the shards' Job and the
# merge Job that waits for them). For an open and a closed loop: 2 shards merged, then the same
# run from one pod, then e2e's TestShardedRunIsTheSameRun compares them request by request,
# with the server's --truth file telling which prompt each request carried.
#
#   test.sh    (environment as cluster.sh's)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CACHE=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}
STATE=${LLMBENCH_K8S_STATE:-$CACHE/k8s-run}
PV=$STATE/pv
IMAGE=docker.io/local/llmbench:dev
k() { "$HERE/cluster.sh" kubectl "$@"; }
log() { echo "test.sh: $(date +%T) $*" >&2; }
s0=$SECONDS

# The results volume: one node, so a hostPath PersistentVolume stands in for the ReadWriteMany
# storage pvc.yaml asks for (no class, so the claim binds to it). The pods run as 65534.
mkdir -p "$PV"
chmod 1777 "$PV"
k apply -f - <<Y
apiVersion: v1
kind: PersistentVolume
metadata: {name: llmbench-results-ci}
spec:
  capacity: {storage: 10Gi} # what pvc.yaml asks
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: "$PV", type: Directory}
Y
k apply -f "$ROOT/deploy/kubernetes/pvc.yaml"

# The target: deploy/kubernetes/target with the local image and a truth file on the volume.
overlay=$(mktemp -d)
trap 'rm -rf "$overlay"' EXIT
ln -s "$ROOT/deploy/kubernetes/target" "$overlay/base"
cat >"$overlay/kustomization.yaml" <<Y
resources: [base]
components: [base/settings]
images:
  - {name: ghcr.io/llmbench/llmbench, newName: docker.io/local/llmbench, newTag: dev}
configMapGenerator:
  - name: llmbench-target
    behavior: merge
    literals: [SIM=textbook, TRUTH=/results/truth.jsonl, CPU=500m, MEMORY=256Mi]
Y
k apply -k "$overlay"
k rollout status deployment/llmbench-target --timeout=120s
ip=$(k get service llmbench-target -o jsonpath='{.spec.clusterIP}')
# No cluster DNS here: the shards reach the Service at its cluster IP (kube-proxy's rules), as
# a user's would at http://llmbench-target:8000.
target=http://$ip:8000
log "target ready at $target (Service llmbench-target)"

# Two shards of 500m CPU and the server's 500m fit the node's two CPUs with room for the
# control plane; the single process gets the same.
run() {
	local id=$1 shards=$2
	shift 2
	local s=$SECONDS
	"$HERE/cluster.sh" exec env IMAGE=$IMAGE LEAD=10 RUN_ID="$id" CPU=500m MEMORY=256Mi \
		"$ROOT/deploy/kubernetes/run.sh" "$shards" "$target" "$@"
	log "$id: $shards shard(s) done in $((SECONDS - s)) s"
}
open=(--rate 8 --requests 160 --warmup 8 --input-tokens 256 --output-tokens 32 --seed 7)
closed=(--concurrency 4 --requests 120 --warmup 8 --input-tokens 256 --output-tokens 32 --seed 7)
run ci-open 2 "${open[@]}"
run ci-open-single 1 "${open[@]}"
run ci-closed 2 "${closed[@]}"
run ci-closed-single 1 "${closed[@]}"

# Copied out as a user would: kubectl cp from a pod that mounts the volume.
sed 's|image: ghcr.io/llmbench/llmbench:latest|image: docker.io/local/llmbench:dev|' "$ROOT/deploy/kubernetes/results-pod.yaml" | k apply -f -
k wait --for=condition=Ready pod/llmbench-results --timeout=60s
copied=$(mktemp -d)
k cp llmbench-results:/results/ci-open/merged "$copied/merged" >/dev/null
cmp "$copied/merged/summary.json" "$PV/ci-open/merged/summary.json"
rm -rf "$copied"
k delete pod llmbench-results --wait=false
log "kubectl cp: the merged results copied out of the volume"

# The server writes its truth file out as it stops.
k delete deployment llmbench-target --wait=true --timeout=60s
k wait --for=delete pod -l app=llmbench-target --timeout=60s || true
log "results on the volume: $(cd "$PV" && echo *)"

# A second target: llama.cpp's llama-server (images.sh makes its image with LLAMA_SERVER set,
# as ci.sh runs it).
k apply -f "$HERE/llamacpp.yaml"
k rollout status deployment/llamacpp-target --timeout=180s
target=http://$(k get service llamacpp-target -o jsonpath='{.spec.clusterIP}'):8080
log "llama-server ready at $target (Service llamacpp-target)"
run ci-llamacpp 2 --rate 4 --requests 40 --warmup 4 --input-tokens 32 --output-tokens 16 --seed 7
k delete deployment llamacpp-target --wait=false

(cd "$ROOT" && LLMBENCH_K8S_RESULTS=$PV LLMBENCH_REQUIRE_K8S=1 go test -count=1 -v -run '^(TestShardedRunIsTheSameRun|TestShardedRunOnLlamaCpp)$' ./e2e/)
log "done in $((SECONDS - s0)) s"
