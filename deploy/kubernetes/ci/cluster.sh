#!/usr/bin/env bash
# A real one-node Kubernetes for CI, built from the registries the project reaches: the
# control plane, kubelet, kube-proxy and kubectl from the Go module proxy (the wrapper module
# in k8s/), etcd, containerd, runc and the CNI plugins from Debian, images made locally as OCI
# archives (images.sh; no registry). Everything runs in a network namespace of its own
# (llmk8s: node 10.77.0.1, pods 10.88.0.0/24, services 10.96.0.0/24, no route out) and a mount
# namespace of its own, so `down` leaves no process, mount, namespace or cgroup behind.
#
#   cluster.sh deps        install the Debian packages (etcd, containerd, runc, CNI plugins,
#                          busybox-static) when missing
#   cluster.sh build       build the Kubernetes binaries (cached) and print their folder
#   cluster.sh up          start the cluster; returns once the node is Ready
#   cluster.sh down        stop everything `up` started and check nothing is left
#   cluster.sh kubectl ... kubectl against the cluster, inside its network namespace
#   cluster.sh exec CMD... any command inside the cluster's network namespace (KUBECONFIG set)
#
# Environment:
#   LLMBENCH_CACHE      cache root (default ~/.cache/llmbench); the binaries go to
#                       $LLMBENCH_CACHE/kubernetes-v1.34.4/bin, built once (cold: about 25 min
#                       on two cores; docs/testing.md)
#   LLMBENCH_K8S_STATE  the running cluster's certificates, data, logs and pids (default
#                       $LLMBENCH_CACHE/k8s-run; `up` starts it afresh)
#   LLMBENCH_K8S_IMAGES OCI archives to import into the node's containerd (images.sh writes
#                       them; default $LLMBENCH_K8S_STATE/../k8s-images/*.tar)
set -euo pipefail

K8S_VERSION=v1.34.4
NS=llmk8s
NODE_IP=10.77.0.1
POD_CIDR=10.88.0.0/24
SERVICE_CIDR=10.96.0.0/24
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}
BIN=$CACHE/kubernetes-$K8S_VERSION/bin
STATE=${LLMBENCH_K8S_STATE:-$CACHE/k8s-run}
IMAGES=${LLMBENCH_K8S_IMAGES:-$CACHE/k8s-images}
COMMANDS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
log() { echo "cluster.sh: $*" >&2; }

deps() {
	local missing=()
	for c in etcd containerd runc busybox; do command -v $c >/dev/null || missing+=($c); done
	[ -x /usr/lib/cni/bridge ] || missing+=(cni)
	[ ${#missing[@]} -eq 0 ] && return
	log "installing ${missing[*]} from Debian"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends etcd-server containerd runc containernetworking-plugins busybox-static >/dev/null
}

build() {
	mkdir -p "$BIN"
	# k8s.io/kubernetes's own go.mod replaces its k8s.io/* staging modules with ./staging,
	# which its module zip lacks: the wrapper module pins each to its released version.
	local ld="-s -w" v
	for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ld+=" -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=34"
	done
	for c in $COMMANDS; do
		[ -x "$BIN/$c" ] && continue
		local s=$SECONDS
		(cd "$HERE/k8s" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "$ld" -o "$BIN/$c" k8s.io/kubernetes/cmd/$c)
		log "built $c in $((SECONDS - s)) s"
	done
	echo "$BIN"
}

# inside runs a command in the cluster's network namespace. Not `ip netns exec`: it remounts
# /sys, which hides the cgroup mounts runc needs.
inside() { nsenter --net=/run/netns/$NS env KUBECONFIG="$STATE/pki/admin.kubeconfig" PATH="$BIN:$PATH" "$@"; }

certs() {
	local d=$STATE/pki
	mkdir -p "$d"
	(
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 7 -subj /CN=llmk8s-ca 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' $NODE_IP >san.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 -extfile san.ext -out apiserver.crt 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		local tok
		tok=$(openssl rand -hex 16)
		echo "$tok,admin,admin,system:masters" >tokens.csv
		cat >admin.kubeconfig <<K
apiVersion: v1
kind: Config
clusters: [{name: llmk8s, cluster: {server: "https://127.0.0.1:6443", certificate-authority: $d/ca.crt}}]
users: [{name: admin, user: {token: "$tok"}}]
contexts: [{name: llmk8s, context: {cluster: llmk8s, user: admin}}]
current-context: llmk8s
K
	)
}

# start runs a daemon in the background, its output in logs/NAME.log, its pid in run/NAME.pid.
start() {
	local n=$1
	shift
	nohup "$@" >"$STATE/logs/$n.log" 2>&1 &
	echo $! >"$STATE/run/$n.pid"
}

# wait_for polls CMD... until it succeeds, for at most $1 seconds.
wait_for() {
	local limit=$1 what=$2
	shift 2
	local t=$SECONDS
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS - t > limit)); then
			log "$what: not within ${limit} s; the logs in $STATE/logs:"
			tail -n 15 "$STATE"/logs/*.log >&2 || true
			return 1
		fi
		sleep 0.5
	done
	log "$what ($((SECONDS - t)) s)"
}

up() {
	for c in $COMMANDS; do
		[ -x "$BIN/$c" ] || { log "$BIN/$c is missing: run '$0 build' first"; exit 1; }
	done
	if [ -e /run/netns/$NS ]; then
		log "a cluster is already up (/run/netns/$NS): '$0 down' first"
		exit 1
	fi
	rm -rf "$STATE"
	mkdir -p "$STATE"/{logs,run,etcd,kubelet,containerd,cni/net.d,cni/ipam,pv}
	certs
	ip netns add $NS
	ip -n $NS link set lo up
	# No dummy link type in every kernel: a veth pair, both ends in the namespace.
	ip -n $NS link add node0 type veth peer name node0p
	ip -n $NS link set node0p up
	ip -n $NS addr add $NODE_IP/24 dev node0
	ip -n $NS link set node0 up
	# The daemons get a mount namespace of their own (kubelet's and containerd's mounts die
	# with them) whose mounts do not propagate back.
	unshare --mount --propagation slave nsenter --net=/run/netns/$NS "$0" up-inside
}

up_inside() {
	local C=$STATE P=$STATE/pki
	cat >"$C/containerd/config.toml" <<T
version = 2
root = "$C/containerd/root"
state = "$C/containerd/state"
[grpc]
  address = "$C/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$C/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/local/pause:1"
  # A root without CAP_SYS_RESOURCE (a CI container) may not lower oom_score_adj, as pause
  # (-998) and Guaranteed pods (-997) ask: keep every container's at containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$C/cni/net.d"
T
	cat >"$C/cni/net.d/10-llmk8s.conflist" <<T
{"cniVersion":"0.4.0","name":"llmk8s","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":false,"hairpinMode":true,
 "ipam":{"type":"host-local","ranges":[[{"subnet":"$POD_CIDR"}]],"routes":[{"dst":"0.0.0.0/0"}],"dataDir":"$C/cni/ipam"}}]}
T
	start containerd containerd --config "$C/containerd/config.toml"
	start etcd etcd --name $NS --data-dir "$C/etcd" --listen-client-urls http://127.0.0.1:2379 \
		--advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster $NS=http://127.0.0.1:2380
	wait_for 60 "containerd up" ctr -a "$C/containerd/containerd.sock" version
	local n=0
	for i in "$IMAGES"/*.tar; do
		[ -e "$i" ] || continue
		ctr -a "$C/containerd/containerd.sock" -n k8s.io images import "$i" >/dev/null
		n=$((n + 1))
	done
	log "imported $n images from $IMAGES"
	start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--bind-address=0.0.0.0 --advertise-address=$NODE_IP --secure-port=6443 \
		--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
		--token-auth-file="$P/tokens.csv" --authorization-mode=AlwaysAllow \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
		--service-cluster-ip-range=$SERVICE_CIDR --allow-privileged=true \
		--kubelet-preferred-address-types=InternalIP
	local K=("$BIN/kubectl" --kubeconfig "$P/admin.kubeconfig")
	wait_for 120 "apiserver ready" "${K[@]}" get --raw /readyz
	start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$P/admin.kubeconfig" \
		--authentication-kubeconfig="$P/admin.kubeconfig" --authorization-kubeconfig="$P/admin.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false --service-account-private-key-file="$P/sa.key" \
		--root-ca-file="$P/ca.crt" --use-service-account-credentials=false
	start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$P/admin.kubeconfig" \
		--authentication-kubeconfig="$P/admin.kubeconfig" --authorization-kubeconfig="$P/admin.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false
	cat >"$C/kubelet/config.yaml" <<T
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
# CI machines may have cgroup v1, which Kubernetes 1.35 refuses by default.
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$C/containerd/containerd.sock
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
T
	start kubelet "$BIN/kubelet" --config="$C/kubelet/config.yaml" --kubeconfig="$P/admin.kubeconfig" \
		--root-dir="$C/kubelet/root" --cert-dir="$C/kubelet/pki" --hostname-override=llmk8s-node --node-ip=$NODE_IP
	# Services: kube-proxy's iptables rules, masquerading all service traffic so a reply
	# from a pod on the same bridge returns through the rules that translated it.
	start kube-proxy "$BIN/kube-proxy" --kubeconfig="$P/admin.kubeconfig" --hostname-override=llmk8s-node \
		--proxy-mode=iptables --masquerade-all --cluster-cidr=$POD_CIDR --bind-address=$NODE_IP \
		--metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256 --conntrack-max-per-core=0
	wait_for 120 "node Ready" sh -c "'$BIN/kubectl' --kubeconfig '$P/admin.kubeconfig' get node llmk8s-node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
	wait_for 60 "default service account" "${K[@]}" get serviceaccount default
}

# pids_in_ns lists the processes in the cluster's network namespace (the daemons, the shims,
# the containers).
pids_in_ns() {
	local ino p
	ino=$(stat -L -c %i /run/netns/$NS 2>/dev/null) || return 0
	for p in /proc/[0-9]*; do
		[ "$(stat -L -c %i "$p/ns/net" 2>/dev/null)" = "$ino" ] && echo "${p#/proc/}"
	done
	# Containers have network namespaces of their own: find them by their containerd shim.
	pgrep -f "containerd-shim.*$STATE" || true
}

down() {
	local n pids
	for n in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver; do
		[ -f "$STATE/run/$n.pid" ] && kill "$(cat "$STATE/run/$n.pid")" 2>/dev/null || true
	done
	sleep 1
	# The containers' processes (each shim's children), then the shims, containerd and etcd.
	for n in $(pgrep -f "containerd-shim.*$STATE" || true); do pkill -KILL -P "$n" 2>/dev/null || true; done
	sleep 0.5
	pkill -f "containerd-shim.*$STATE" 2>/dev/null || true
	for n in containerd etcd; do
		[ -f "$STATE/run/$n.pid" ] && kill "$(cat "$STATE/run/$n.pid")" 2>/dev/null || true
	done
	for _ in $(seq 20); do
		pids=$(pids_in_ns | sort -u | tr '\n' ' ')
		[ -z "${pids// /}" ] && break
		sleep 0.5
	done
	if [ -n "${pids// /}" ]; then
		log "killing what is left: $pids"
		kill -KILL $pids 2>/dev/null || true
		sleep 0.5
	fi
	[ -e /run/netns/$NS ] && ip netns delete $NS
	# containerd names each pod's network namespace in /run/netns and binds it there in the
	# cluster's mount namespace: once that is gone, the names left are empty files.
	for n in /run/netns/cni-*; do
		[ -e "$n" ] && ! mountpoint -q "$n" && rm -f "$n"
	done
	# The pods' cgroups (cgroupfs driver) outlive their processes.
	find /sys/fs/cgroup -depth -type d -path '*kubepods*' -exec rmdir {} + 2>/dev/null || true
	local left=0
	if [ -n "$(pids_in_ns)" ] || pgrep -f "$STATE" >/dev/null; then log "processes left: $(pgrep -af "$STATE")"; left=1; fi
	if grep -q "$STATE" /proc/mounts; then log "mounts left: $(grep "$STATE" /proc/mounts)"; left=1; fi
	if [ -e /run/netns/$NS ]; then log "network namespace $NS left"; left=1; fi
	if find /sys/fs/cgroup -type d -path '*kubepods*' 2>/dev/null | grep -q .; then log "cgroups left under kubepods"; left=1; fi
	[ $left -eq 0 ] && log "down: no process, mount, namespace or cgroup left"
	return $left
}

case ${1:-} in
deps) deps ;;
build) build ;;
up) up ;;
up-inside) up_inside ;;
down) down ;;
kubectl)
	shift
	inside kubectl "$@"
	;;
exec)
	shift
	inside "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
	exit 2
	;;
esac
