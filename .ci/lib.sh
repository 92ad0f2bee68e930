# shellcheck shell=bash
# Shared by .ci/ollama.sh and .ci/llamacpp.sh (sourced, not run). The sourcing script sets
# NAME (the prefix of its messages), ROOT (the repository), CACHE and STATE first.

say() { echo "$NAME: $*" >&2; }
die() {
  say "error: $*"
  exit 1
}

# need_pkg CMD PKG WHY: install Debian package PKG when command CMD is missing (as root,
# with apt-get; the CI machine is a fresh Debian), or fail saying WHY it is needed.
need_pkg() {
  command -v "$1" >/dev/null && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing $2 (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2 ||
      { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2; }
  else
    die "$3 (apt-get install $2)"
  fi
}

# build_failed TMP WHAT: show the end of TMP/build.log, remove TMP (a build directory) and fail.
build_failed() {
  tail -n 40 "$1/build.log" >&2
  rm -rf "$1"
  die "$2 failed"
}

# cache_built TMP BUILT DEST START: move the binary BUILT into the cache as DEST (atomic, so
# a half-built binary is never cached), remove the build directory TMP, and say how long the
# build took since SECONDS was START.
cache_built() {
  mkdir -p "$(dirname "$3")"
  mv "$2" "$3"
  rm -rf "$1"
  say "built $3 in $((SECONDS - $4)) s"
}

# gguf_tokenizer prints the tokenizer.json(.gz) for the model's vocabulary (by default the
# committed Llama 3 one), or nothing for ggufgen's made-up one (LLMBENCH_GGUF_TOKENIZER=none).
gguf_tokenizer() {
  local t=${LLMBENCH_GGUF_TOKENIZER-}
  [ -z "$t" ] && t=$ROOT/internal/tokenizer/testdata/llama3/tokenizer.json.gz
  [ "$t" = none ] && t=
  echo "$t"
}

# gguf_model OUT writes tools/ggufgen's model to OUT. Regenerated every start: it takes a
# second and keeps the served model in step with tools/ggufgen.
gguf_model() {
  local tok args=()
  tok=$(gguf_tokenizer)
  if [ -n "$tok" ]; then
    [ -f "$tok" ] || die "tokenizer $tok not found"
    args=(-tokenizer "$tok")
    say "vocabulary: $tok"
  else
    say "vocabulary: ggufgen's made-up one"
  fi
  mkdir -p "$(dirname "$1")"
  (cd "$ROOT" && go run ./tools/ggufgen -out "$1" -seed 1 "${args[@]}") >&2
}

# pid_running PID_FILE: the process the pid file names is alive.
pid_running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid WHAT PID_FILE: SIGTERM the process the pid file names, SIGKILL after 10 s.
stop_pid() {
  if ! pid_running "$2"; then
    say "no $1 running (pid file $2)"
    rm -f "$2"
    return
  fi
  local pid _
  pid=$(cat "$2")
  say "stopping $1 (pid $pid)"
  kill "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running after 10 s; SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$2"
}

# wait_answering WHAT PID_FILE LOG SECONDS: wait until `answering` (defined by the caller)
# succeeds, failing early when the process dies.
wait_answering() {
  local _
  for _ in $(seq 1 $(($4 * 5))); do
    answering && return
    pid_running "$2" || { tail -n 30 "$3" >&2; die "$1 exited"; }
    sleep 0.2
  done
  answering || { tail -n 30 "$3" >&2; die "$1 did not answer within $4 s"; }
}

# verb VERB BINARY [GO TEST FLAGS...]: what the scripts do when run, with their build,
# start and stop functions: build (print the binary's path), start, stop, or test (start,
# go test ./e2e/ with the flags against the server, stop).
verb() {
  case "$1" in
  build)
    build
    echo "$2"
    ;;
  start) start ;;
  stop) stop ;;
  test)
    trap stop EXIT
    local envs
    envs=$(start) # an assignment keeps start's exit status, so set -e stops here on failure
    eval "$envs"
    say "go test${3:+ ${*:3}} ./e2e/"
    (cd "$ROOT" && go test -count=1 -v "${@:3}" ./e2e/)
    ;;
  *)
    echo "usage: $0 [start|stop|test|build]" >&2
    exit 2
    ;;
  esac
}
