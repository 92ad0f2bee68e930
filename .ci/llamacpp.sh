#!/usr/bin/env bash
# A second real inference server for the end-to-end tests: llama.cpp's llama-server, built
# from the llama.cpp source that the npm package node-llama-cpp carries (a git bundle), serving
# the tiny random-weight Llama model that tools/ggufgen writes, on 127.0.0.1, CPU only, with
# an API key.
#
#   .ci/llamacpp.sh start   build (cached), generate the model, start llama-server in the
#                           background (three instances of it: generation on the port,
#                           embeddings --embeddings --pooling mean on port+1, reranking
#                           --reranking on port+2) and print `export ...` lines for the tests on stdout:
#                             .ci/llamacpp.sh start >llamacpp.env && . ./llamacpp.env
#                             trap '.ci/llamacpp.sh stop' EXIT
#                           (not `eval "$(.ci/llamacpp.sh start)"`: eval hides a failed start)
#   .ci/llamacpp.sh stop    stop the servers started by `start` (pid files)
#   .ci/llamacpp.sh test    start, run `go test -run LlamaCpp ./e2e/`, stop
#   .ci/llamacpp.sh build   only build (or find) the llama-server binary and print its path
#
# Progress goes to stderr. Idempotent: a cached build is reused, a running server is reused.
# Environment:
#   LLMBENCH_CACHE              cache root (default ~/.cache/llmbench); the npm tarball is
#                               cached under it in llamacpp-node-llama-cpp-3.21.1/ (keyed by the
#                               npm package's version), the binary in its bin-$BUILD/ (keyed by
#                               the build's flavour too)
#   LLMBENCH_LLAMACPP_PORT      port (default 8089; the embeddings and reranking servers take
#                               the next two)
#   LLMBENCH_LLAMACPP_API_KEY   the key the server requires (default llmbench-test-key)
#   LLMBENCH_LLAMACPP_THREADS   ggml threads (default 1: faster and steadier than 2 on two
#                               busy cores, measured in docs/real-servers.md)
#   LLMBENCH_LLAMACPP_JOBS      parallel compile jobs of the build (default 2)
#   LLMBENCH_LLAMACPP_STATE     model, log, pid (default $LLMBENCH_CACHE/llamacpp-run)
#   LLMBENCH_GGUF_TOKENIZER     tokenizer.json(.gz) for the model's vocabulary (default the
#                               committed internal/tokenizer/testdata/llama3/tokenizer.json.gz;
#                               "none": ggufgen's made-up ~1000-token vocabulary)
set -euo pipefail

# node-llama-cpp 3.21.1 bundles llama.cpp as one squashed commit of 2026-09-12 (80fb11a).
NODE_LLAMA_CPP_VERSION=3.21.1
NODE_LLAMA_CPP_SHA1=f7579ace3d45c8e93856cebbd8671fa43c2eef1b # the registry's shasum of the tarball
MODEL=llmbench-tiny
NAME=llamacpp.sh

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}
DIR=$CACHE/llamacpp-node-llama-cpp-$NODE_LLAMA_CPP_VERSION
TARBALL=$DIR/node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz
# The build's flavour, part of the binary's cache key: a change of the cmake flags below
# must change it, or a cached binary of the old flags would be served.
BUILD=x86-64-v3-nollamafile
BIN_DIR=$DIR/bin-$BUILD
SERVER=$BIN_DIR/llama-server
STATE=${LLMBENCH_LLAMACPP_STATE:-$CACHE/llamacpp-run}
PORT=${LLMBENCH_LLAMACPP_PORT:-8089}
ADDR=127.0.0.1:$PORT
API_KEY=${LLMBENCH_LLAMACPP_API_KEY:-llmbench-test-key}
THREADS=${LLMBENCH_LLAMACPP_THREADS:-1}
PID_FILE=$STATE/serve.pid
LOG=$STATE/serve.log
# The embeddings (--embeddings --pooling mean) and reranking (--reranking) servers, for the
# e2e tests of --api openai-embeddings and rerank: the same model, two slots each.
EMBED_ADDR=127.0.0.1:$((PORT + 1))
RERANK_ADDR=127.0.0.1:$((PORT + 2))

# shellcheck source=.ci/lib.sh
. "$ROOT/.ci/lib.sh"

# fetch_source puts node-llama-cpp's tarball in the cache (npm pack: the npm registry is
# the one place this comes from), atomically.
fetch_source() {
  [ -f "$TARBALL" ] && return
  need_pkg npm npm "npm is needed to fetch llama.cpp's source (npm pack node-llama-cpp)"
  local tmp
  mkdir -p "$DIR"
  tmp=$(mktemp -d "$DIR/.npm.XXXXXX")
  say "fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION from npm (35 MB)"
  (cd "$tmp" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null 2>"$tmp/npm.log") ||
    { cat "$tmp/npm.log" >&2; rm -rf "$tmp"; die "npm pack node-llama-cpp@$NODE_LLAMA_CPP_VERSION failed"; }
  local sum
  sum=$(sha1sum "$tmp/node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz" | cut -d' ' -f1)
  [ "$sum" = "$NODE_LLAMA_CPP_SHA1" ] ||
    { rm -rf "$tmp"; die "node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz has sha1 $sum, want $NODE_LLAMA_CPP_SHA1"; }
  mv "$tmp/node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz" "$TARBALL"
  rm -rf "$tmp"
}

# build compiles llama-server into the cache unless it is already there: only that target,
# statically linked (one file to cache), for x86-64-v3 (AVX2, FMA, F16C, BMI2) rather than
# the build machine's CPU (GGML_NATIVE=OFF), so a cached binary runs wherever CI lands, and
# without anything that downloads: no web UI (LLAMA_BUILD_UI=OFF, and LLAMA_USE_PREBUILT_UI=OFF,
# which would fetch it from Hugging Face), no OpenSSL, no tests or examples. Without OpenMP
# (ggml's own thread pool; we run one thread), so the binary needs only libstdc++ and libc.
# Without llamafile's sgemm (GGML_LLAMAFILE=OFF; ggml's own matmul instead): on AVX2 its
# tiles are at most 3 batch columns wide, and each tile reads the whole 16 MB output matrix
# again, so a decode step costs 0.9, 1.3, 1.6, then 2.5 ms at 1–4 sequences, a jump at the
# 4th that e2e's calibrate test (a probe of at most 2 in flight, predicting 4 and 8) cannot
# see; ggml's matmul reads it once per 16 columns, and the step grows by the same ~0.9 ms
# each sequence (docs/real-servers.md).
build() {
  if [ -x "$SERVER" ]; then
    say "using cached $SERVER"
    return
  fi
  need_pkg git git "git is needed to unpack llama.cpp's source"
  need_pkg g++ g++ "g++ is needed to build llama-server"
  need_pkg cmake cmake "cmake is needed to build llama-server"
  fetch_source
  local tmp start=$SECONDS
  tmp=$(mktemp -d "$DIR/.build.XXXXXX")
  say "unpacking llama.cpp from $TARBALL"
  tar -xzf "$TARBALL" -C "$tmp" package/llama/gitRelease.bundle
  git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/src" 2>/dev/null ||
    { rm -rf "$tmp"; die "git clone of node-llama-cpp's llama.cpp bundle failed"; }
  rm -rf "$tmp/package"
  say "building llama-server (llama.cpp $(git -C "$tmp/src" rev-parse --short HEAD); cmake, ${LLMBENCH_LLAMACPP_JOBS:-2} jobs, several minutes)"
  if ! cmake -S "$tmp/src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_CCACHE=OFF \
    -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON \
    -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF >"$tmp/build.log" 2>&1 ||
    ! cmake --build "$tmp/build" --target llama-server -j "${LLMBENCH_LLAMACPP_JOBS:-2}" >>"$tmp/build.log" 2>&1 ||
    ! "$tmp/build/bin/llama-server" --version >>"$tmp/build.log" 2>&1; then
    build_failed "$tmp" "building llama-server"
  fi
  cache_built "$tmp" "$tmp/build/bin/llama-server" "$SERVER" "$start"
}

running() { pid_running "$PID_FILE"; }
# /health answers without the key: 200 once the model is loaded, 503 while loading.
answering() { curl -fsS -o /dev/null --max-time 2 "http://$ADDR/health" 2>/dev/null; }

# serve_side NAME ADDR ARGS...: start (or reuse) the llama-server NAME (embed, rerank) on
# ADDR with the extra ARGS, its pid in $STATE/NAME.pid and its log in $STATE/NAME.log.
serve_side() {
  local name=$1 ADDR=$2 pid_file=$STATE/$1.pid log=$STATE/$1.log
  shift 2
  if pid_running "$pid_file" && answering; then
    say "reusing the $name llama-server (pid $(cat "$pid_file")) on $ADDR"
    return
  fi
  answering && die "something else answers on $ADDR; set LLMBENCH_LLAMACPP_PORT"
  say "starting the $name llama-server on $ADDR (log $log)"
  nohup "$SERVER" -m "$STATE/model.gguf" --alias "$MODEL" --host 127.0.0.1 --port "${ADDR##*:}" \
    --api-key "$API_KEY" -np 2 -c 2048 -t "$THREADS" -tb "$THREADS" --cache-ram 0 --no-webui "$@" \
    >"$log" 2>&1 </dev/null &
  echo $! >"$pid_file"
  wait_answering "the $name llama-server on $ADDR" "$pid_file" "$log" 60
}

# served_model prints the model id the server reports in /v1/models.
served_model() {
  curl -fsS --max-time 10 -H "Authorization: Bearer $API_KEY" "http://$ADDR/v1/models" |
    sed -n 's/.*"data" *: *\[ *{ *"id" *: *"\([^"]*\)".*/\1/p'
}

env_lines() {
  echo "export LLMBENCH_LLAMACPP_URL=http://$ADDR"
  echo "export LLMBENCH_LLAMACPP_API_KEY=$API_KEY"
  echo "export LLMBENCH_LLAMACPP_MODEL=$1"
  echo "export LLMBENCH_LLAMACPP_PID_FILE=$PID_FILE"
  echo "export LLMBENCH_LLAMACPP_EMBED_URL=http://$EMBED_ADDR"
  echo "export LLMBENCH_LLAMACPP_RERANK_URL=http://$RERANK_ADDR"
}

start() {
  need_pkg curl curl "curl is needed to talk to llama-server"
  build
  if running && answering; then
    say "reusing llama-server (pid $(cat "$PID_FILE")) on $ADDR"
  else
    if answering; then
      die "something else answers on $ADDR; set LLMBENCH_LLAMACPP_PORT"
    fi
    gguf_model "$STATE/model.gguf"
    say "starting llama-server on $ADDR ($THREADS thread(s), log $LOG)"
    # 4 slots for the e2e tests' --concurrency 4; with -np given the 4096-token KV cache is
    # split, 1024 per slot (a request needs at most 256 + 128 + the chat template's ~30). Sampling, not greedy
    # decoding (greedy decoding of random weights repeats one token), with a fixed seed so
    # a given prompt's answer is reproducible; -n 256 caps requests that send no limit (the
    # model never stops by itself). One thread by default: ggml's threads spin on barriers,
    # and on two busy cores a second thread stalls more than it helps (docs/real-servers.md).
    # No prompt cache in RAM (--cache-ram 0): it keeps every finished prompt's KV and each
    # new request searches them all, on the engine's thread, so a request's overhead grew
    # from 1.7 to 5.5-6.2 ms over the ~30,000 requests of a few e2e runs, and the server
    # measured at the end of CI was not the one calibrated minutes earlier. --jinja (this
    # build's default, given so that it stays on): the model's Jinja chat template, which
    # renders a request's tools and parses tool calls out of the answer (the e2e tool tests).
    nohup "$SERVER" -m "$STATE/model.gguf" --alias "$MODEL" --host 127.0.0.1 --port "$PORT" \
      --api-key "$API_KEY" -np 4 -c 4096 -t "$THREADS" -tb "$THREADS" -n 256 --jinja \
      --temp 1 --top-k 40 --top-p 0.95 --min-p 0 --seed 42 --cache-ram 0 --no-webui \
      >"$LOG" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    wait_answering "llama-server on $ADDR" "$PID_FILE" "$LOG" 60
    say "llama-server answers (pid $(cat "$PID_FILE"))"
  fi
  # One generation, so the first measured request pays nothing extra, and a check that the
  # key works and the model generates.
  curl -fsS --max-time 60 -H "Authorization: Bearer $API_KEY" -H 'Content-Type: application/json' \
    -d '{"prompt":"Say something.","n_predict":8}' "http://$ADDR/completion" >"$STATE/warmup.json" 2>&1 ||
    { cat "$STATE/warmup.json" >&2; tail -n 30 "$LOG" >&2; die "warm-up generation failed"; }
  # The model file is the generation server's (written above when it started).
  serve_side embed "$EMBED_ADDR" --embeddings --pooling mean
  serve_side rerank "$RERANK_ADDR" --reranking
  local model
  model=$(served_model)
  [ -n "$model" ] || die "no model id in /v1/models"
  say "model $model loaded ($(du -h "$STATE/model.gguf" | cut -f1) GGUF); server ready at http://$ADDR"
  env_lines "$model"
}

stop() {
  stop_pid llama-server "$PID_FILE"
  stop_pid "embeddings llama-server" "$STATE/embed.pid"
  stop_pid "reranking llama-server" "$STATE/rerank.pid"
}

verb "${1:-start}" "$SERVER" -run LlamaCpp
