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
NAME=ollama.sh

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${LLMBENCH_CACHE:-$HOME/.cache/llmbench}
BIN_DIR=$CACHE/ollama-$OLLAMA_VERSION/bin
OLLAMA=$BIN_DIR/ollama
STATE=${LLMBENCH_OLLAMA_STATE:-$CACHE/ollama-run}
PORT=${LLMBENCH_OLLAMA_PORT:-11435}
ADDR=127.0.0.1:$PORT
PID_FILE=$STATE/serve.pid
LOG=$STATE/serve.log

# shellcheck source=.ci/lib.sh
. "$ROOT/.ci/lib.sh"

# build installs ollama into the cache unless it is already there. The CPU backend needs
# -march=x86-64-v3 (AVX2, FMA, F16C): without it ggml falls back to scalar code, 3x slower.
build() {
  if [ -x "$OLLAMA" ]; then
    say "using cached $OLLAMA"
    return
  fi
  command -v go >/dev/null || die "go is not installed"
  # ollama's ggml is C and C++; Debian's gcc package has no C++ compiler.
  need_pkg g++ g++ "g++ is needed to build ollama"
  local tmp start=$SECONDS
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.ollama-build.XXXXXX")
  say "building ollama $OLLAMA_VERSION (go install, cgo -O3 -march=x86-64-v3; a few minutes)"
  if ! GOBIN=$tmp CGO_ENABLED=1 \
    CGO_CFLAGS="-O3 -march=x86-64-v3" CGO_CXXFLAGS="-O3 -march=x86-64-v3" GOFLAGS=-mod=mod \
    go install "github.com/ollama/ollama@$OLLAMA_VERSION" 2>"$tmp/build.log"; then
    # the build prints many harmless C++ warnings; show them only when it fails
    build_failed "$tmp" "go install github.com/ollama/ollama@$OLLAMA_VERSION"
  fi
  cache_built "$tmp" "$tmp/ollama" "$OLLAMA" "$start"
}

# ollama_cli runs the ollama client against our server only.
ollama_cli() { OLLAMA_HOST=$ADDR "$OLLAMA" "$@"; }

running() { pid_running "$PID_FILE"; }
answering() { ollama_cli list >/dev/null 2>&1; }

# model writes the GGUF and the Modelfile.
model() {
  gguf_model "$STATE/model.gguf"
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
    wait_answering "ollama serve on $ADDR" "$PID_FILE" "$LOG" 60
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

# SIGTERM: serve stops its runner subprocess before exiting.
stop() { stop_pid "ollama serve" "$PID_FILE"; }

verb "${1:-start}" "$OLLAMA"
