# shellcheck shell=bash
# bench/serve.sh: what the benchmark scripts share; sourced, not run.

# start_serve LOG CMD...: runs CMD (an `llmbench serve --listen 127.0.0.1:0 ...`, with any
# wrapper words before it) in the background, its output in LOG, and waits up to 10 s for
# the address it says it listens on. Sets serve_pid and url; exits the script if it never
# says.
start_serve() {
	local log=$1
	shift
	: >"$log" # exists before the background shell opens it
	"$@" >"$log" 2>&1 &
	serve_pid=$!
	url=
	for _ in $(seq 100); do
		url=$(sed -n 's/^listening on //p' "$log" || true)
		[ -n "$url" ] && return 0
		sleep 0.1
	done
	echo "serve did not start:" >&2
	cat "$log" >&2
	kill "$serve_pid"
	exit 1
}
