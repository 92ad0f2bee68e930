#!/usr/bin/env bash
# A real inference server for the end-to-end tests: Ollama v0.6.5 built from the Go module
# proxy, serving a tiny random-weight Llama model that tools/ggufgen writes, on 127.0.0.1, CPU only.
#
#   .ci/ollama.sh start   build (cached), generate the model, start `ollama serve` in the
#                         background and print `export ...` lines for the tests on stdout:
#                           .ci/ollama.sh start >ollama.env && . ./ollama.env
#                           trap '.ci/ollama.sh stop' EXIT
#                         (not `eval "$(.ci/ollama.sh start)"`: eval hides a failed start)
#   .ci/ollama.sh stop    stop the server started by `start` (pid file)
#   .ci/ollama.sh test    start, run `go test ./e2e/`, stop
#   .ci/ollama.sh build   only build (or find) the ollama binary and print its path
#
# Progress goes to stderr. Idempotent: a cached build is reused, a running server is reused.
# Environment:
#   LLMBENCH_CACHE             cache root (default ~/.cache/llmbench); the binary is cached
#                              under it in ollama-v0.6.5/, keyed by version
#   LLMBENCH_OLLAMA_PORT       port (default 11435, beside Ollama's usual 11434)
#   LLMBENCH_OLLAMA_STATE      model, Modelfile, models dir, log, pid (default $LLMBENCH_CACHE/ollama-run)
#   LLMBENCH_GGUF_TOKENIZER    tokenizer.json(.gz) for the model's vocabulary (default the
#                              committed internal/tokenizer/testdata/llama3/tokenizer.json.gz;
#                              "none": ggufgen's made-up ~1000-token vocabulary)
set -euo pipefail

OLLAMA_VERSION=v0.6.5 # later versions' module zips lack the vendored ggml headers
MODEL=llmbench-tiny

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}
BIN_DIR=$CACHE/ollama-$OLLAMA_VERSION/bin
OLLAMA=$BIN_DIR/ollama
STATE=${LLMBENCH_OLLAMA_STATE:-$CACHE/ollama-run}
PORT=${LLMBENCH_OLLAMA_PORT:-11435}
ADDR=127.0.0.1:$PORT
PID_FILE=$STATE/serve.pid
LOG=$STATE/serve.log

say() { echo "ollama.sh: $*" >&2; }
die() { say "error: $*"; exit 1; }

# build installs ollama into the cache unless it is already there. The CPU backend needs
# -march=x86-64-v3 (AVX2, FMA, F16C): without it ggml falls back to scalar code, 3x slower.
build() {
  if [ -x "$OLLAMA" ]; then
    say "using cached $OLLAMA"
    return
  fi
  command -v go >/dev/null || die "go is not installed"
  if ! command -v g++ >/dev/null; then
    # ollama's ggml is C and C++; Debian's gcc package has no C++ compiler.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing g++ (apt-get)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >&2 ||
        { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >&2; }
    else
      die "g++ is needed to build ollama (apt-get install g++)"
    fi
  fi
  local tmp start=$SECONDS
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.ollama-build.XXXXXX")
  say "building ollama $OLLAMA_VERSION (go install, cgo -O3 -march=x86-64-v3; a few minutes)"
  if ! GOBIN=$tmp CGO_ENABLED=1 \
    CGO_CFLAGS="-O3 -march=x86-64-v3" CGO_CXXFLAGS="-O3 -march=x86-64-v3" GOFLAGS=-mod=mod \
    go install "github.com/ollama/ollama@$OLLAMA_VERSION" 2>"$tmp/build.log"; then
    # the build prints many harmless C++ warnings; show them only when it fails
    tail -n 40 "$tmp/build.log" >&2
    rm -rf "$tmp"
    die "go install github.com/ollama/ollama@$OLLAMA_VERSION failed"
  fi
  mkdir -p "$BIN_DIR"
  mv "$tmp/ollama" "$OLLAMA" # atomic: a half-built binary is never cached
  rm -rf "$tmp"
  say "built $OLLAMA in $((SECONDS - start)) s"
}

# ollama_cli runs the ollama client against our server only.
ollama_cli() { OLLAMA_HOST=$ADDR "$OLLAMA" "$@"; }

running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }
answering() { ollama_cli list >/dev/null 2>&1; }

tokenizer() {
  local t=${LLMBENCH_GGUF_TOKENIZER-}
  [ -z "$t" ] && t=$ROOT/internal/tokenizer/testdata/llama3/tokenizer.json.gz
  [ "$t" = none ] && t=
  echo "$t"
}

# model writes the GGUF and the Modelfile. Regenerated every start: it takes a second and
# keeps the served model in step with tools/ggufgen.
model() {
  mkdir -p "$STATE"
  local tok args=()
  tok=$(tokenizer)
  if [ -n "$tok" ]; then
    [ -f "$tok" ] || die "tokenizer $tok not found"
    args=(-tokenizer "$tok")
    say "vocabulary: $tok"
  else
    say "vocabulary: ggufgen's made-up one"
  fi
  (cd "$ROOT" && go run ./tools/ggufgen -out "$STATE/model.gguf" -seed 1 "${args[@]}") >&2
  # Sampling, not greedy decoding: greedy decoding of random weights repeats one token and
  # Ollama aborts a stream after 31 repeats. The fixed seed makes a given prompt's answer
  # reproducible. num_predict caps requests that send no limit (the model never stops by
  # itself); clients' max_tokens / options.num_predict override it. One thread: ggml's
  # threads spin on barriers, and with two on two busy cores a token took 400 ms, not 3 ms.
  cat >"$STATE/Modelfile" <<'EOF'
FROM ./model.gguf
TEMPLATE """{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>

{{ .Content }}<|eot_id|>
{{- end }}<|start_header_id|>assistant<|end_header_id|>

"""
PARAMETER temperature 1
PARAMETER top_k 40
PARAMETER top_p 0.95
PARAMETER seed 42
PARAMETER num_predict 256
PARAMETER num_thread 1
EOF
}

env_lines() {
  echo "export OLLAMA_HOST=http://$ADDR"
  echo "export LLMBENCH_OLLAMA_URL=http://$ADDR"
  echo "export LLMBENCH_OLLAMA_MODEL=$MODEL"
  echo "export LLMBENCH_OLLAMA_PID_FILE=$PID_FILE"
}

start() {
  build
  model
  if running && answering; then
    say "reusing ollama serve (pid $(cat "$PID_FILE")) on $ADDR"
  else
    if answering; then
      die "something else answers on $ADDR; set LLMBENCH_OLLAMA_PORT"
    fi
    mkdir -p "$STATE/models"
    say "starting ollama serve on $ADDR (models in $STATE/models, log $LOG)"
    # CPU only; two parallel sequences match the e2e test's --concurrency 2; keep the model
    # loaded between requests so no request pays the load.
    OLLAMA_HOST=$ADDR OLLAMA_MODELS=$STATE/models OLLAMA_NUM_PARALLEL=2 OLLAMA_MAX_LOADED_MODELS=1 \
      OLLAMA_KEEP_ALIVE=-1 OLLAMA_NOPRUNE=1 CUDA_VISIBLE_DEVICES= HIP_VISIBLE_DEVICES= \
      nohup "$OLLAMA" serve >"$LOG" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    local i
    for i in $(seq 1 300); do
      answering && break
      running || { tail -n 30 "$LOG" >&2; die "ollama serve exited"; }
      sleep 0.2
    done
    answering || { tail -n 30 "$LOG" >&2; die "ollama serve did not answer on $ADDR within 60 s"; }
    say "ollama serve answers (pid $(cat "$PID_FILE"))"
  fi
  (cd "$STATE" && ollama_cli create "$MODEL" -f Modelfile >"$STATE/create.log" 2>&1) ||
    { cat "$STATE/create.log" >&2; die "ollama create failed"; }
  say "created model $MODEL ($(du -h "$STATE/model.gguf" | cut -f1) GGUF)"
  # Load it now (and check it generates), so the first measured request pays no load time.
  echo "Say something." | ollama_cli run "$MODEL" >/dev/null 2>"$STATE/warmup.log" ||
    { cat "$STATE/warmup.log" >&2; tail -n 30 "$LOG" >&2; die "warm-up generation failed"; }
  say "model loaded; server ready at http://$ADDR"
  env_lines
}

stop() {
  if ! running; then
    say "no ollama serve running (pid file $PID_FILE)"
    rm -f "$PID_FILE"
    return
  fi
  local pid i
  pid=$(cat "$PID_FILE")
  say "stopping ollama serve (pid $pid)"
  kill "$pid" # SIGTERM: serve stops its runner subprocess before exiting
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running after 10 s; SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
}

case "${1:-start}" in
build)
  build
  echo "$OLLAMA"
  ;;
start) start ;;
stop) stop ;;
test)
  trap stop EXIT
  envs=$(start) # an assignment keeps start's exit status, so set -e stops here on failure
  eval "$envs"
  say "go test ./e2e/ against $LLMBENCH_OLLAMA_URL"
  (cd "$ROOT" && go test -count=1 -v ./e2e/)
  ;;
*)
  echo "usage: $0 [start|stop|test|build]" >&2
  exit 2
  ;;
esac
