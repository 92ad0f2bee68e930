#!/usr/bin/env bash
# The images the CI cluster runs, made without a registry or a container builder: each an OCI
# archive of one layer (tar, sha256sum and JSON) that `cluster.sh up` imports into the node's
# containerd.
#
#   images.sh [OUT]   writes OUT/pause.tar (docker.io/local/pause:1, a static C pause) and
#                     OUT/llmbench.tar (docker.io/local/llmbench:dev: busybox-static as /bin/sh
#                     and the tools, and a static llmbench built from this checkout) — what
#                     deploy/kubernetes/Dockerfile builds, from files on this machine.
#                     OUT defaults to $LLMBENCH_CACHE/k8s-images (cluster.sh's default).
#                     With LLAMA_SERVER set to a llama-server binary (.ci/llamacpp.sh build),
#                     also OUT/llama-server.tar (docker.io/local/llama-server:dev): it, the
#                     shared libraries it links, and tools/ggufgen's tiny model at /model.gguf.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=${1:-${LLMBENCH_CACHE:-$HOME/.cache/llmbench}/k8s-images}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# oci REF ARCHIVE ROOTFS ENTRYPOINT_JSON USER: a one-layer image archive of ROOTFS.
oci() {
	local ref=$1 out=$2 root=$3 ep=$4 user=$5 w
	w=$(mktemp -d -p "$work")
	mkdir -p "$w/blobs/sha256"
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$root" -cf "$w/layer.tar" .
	local diffid lsha lsize csha csize msha msize
	diffid=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
	gzip -n -1 "$w/layer.tar"
	lsha=$(sha256sum "$w/layer.tar.gz" | cut -d' ' -f1)
	lsize=$(stat -c%s "$w/layer.tar.gz")
	mv "$w/layer.tar.gz" "$w/blobs/sha256/$lsha"
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"User":"%s","Env":["PATH=/usr/local/bin:/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$ep" "$user" "$diffid" >"$w/config"
	csha=$(sha256sum "$w/config" | cut -d' ' -f1)
	csize=$(stat -c%s "$w/config")
	mv "$w/config" "$w/blobs/sha256/$csha"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
		"$csha" "$csize" "$lsha" "$lsize" >"$w/manifest"
	msha=$(sha256sum "$w/manifest" | cut -d' ' -f1)
	msize=$(stat -c%s "$w/manifest")
	mv "$w/manifest" "$w/blobs/sha256/$msha"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$msha" "$msize" "$ref" "${ref##*:}" >"$w/index.json"
	tar -C "$w" -cf "$out" oci-layout index.json blobs
}

# The pod sandbox: sleeps until told to stop, reaping children.
mkdir -p "$work/pause"
cat >"$work/pause.c" <<'C'
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, 0, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction q = {.sa_handler = quit}, r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &q, 0); sigaction(SIGTERM, &q, 0); sigaction(SIGCHLD, &r, 0);
  for (;;) pause();
}
C
gcc -Os -static -o "$work/pause/pause" "$work/pause.c"
oci docker.io/local/pause:1 "$OUT/pause.tar" "$work/pause" '["/pause"]' ""

# llmbench on busybox, as the Dockerfile builds it: the Job's command needs a shell.
r=$work/llmbench
mkdir -p "$r/bin" "$r/usr/local/bin" "$r/tmp" "$r/etc"
cp "$(command -v busybox)" "$r/bin/busybox"
for a in sh seq cat ls mkdir sleep date tar; do ln -s busybox "$r/bin/$a"; done
chmod 1777 "$r/tmp"
echo 'nobody:x:65534:65534:nobody:/tmp:/bin/sh' >"$r/etc/passwd"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$r/usr/local/bin/llmbench" ./cmd/llmbench)
oci docker.io/local/llmbench:dev "$OUT/llmbench.tar" "$r" '["llmbench"]' "65534:65534"
# llama.cpp's server with the tiny model CI serves (.ci/lib.sh's gguf_model), when given.
rm -f "$OUT/llama-server.tar"
if [ -n "${LLAMA_SERVER:-}" ]; then
	r=$work/llama
	mkdir -p "$r/usr/local/bin" "$r/tmp"
	chmod 1777 "$r/tmp"
	cp "$LLAMA_SERVER" "$r/usr/local/bin/llama-server"
	# The loader and every library ldd resolves, at the same paths.
	for lib in $(ldd "$LLAMA_SERVER" | grep -o '/[^ ]*'); do
		mkdir -p "$r$(dirname "$lib")"
		cp -L "$lib" "$r$lib"
	done
	(cd "$ROOT" && go run ./tools/ggufgen -out "$r/model.gguf" -seed 1 \
		-tokenizer internal/tokenizer/testdata/llama3/tokenizer.json.gz) >&2
	oci docker.io/local/llama-server:dev "$OUT/llama-server.tar" "$r" '["/usr/local/bin/llama-server"]' "65534:65534"
fi
echo "$OUT"
