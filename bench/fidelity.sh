#!/usr/bin/env bash
# bench/fidelity.sh: how precisely does llmbench's client time token events under load?
#
# For each stream count it starts `llmbench serve` with bench/fast50.yaml (every stream paced
# at 50 tokens/s, so N streams make 50 x N token events/s) writing its ground truth, runs
# `llmbench run` at that concurrency against it, then `llmbench fidelity` to compare what the
# client recorded with what the server sent. It reports the event-time error, the TTFT and
# ITL error, the client's CPU use and memory, and its schedule lag, in a markdown table. Beside
# each run, bench/stallmon measures how late the machine wakes a thread that sleeps 1 ms: the
# floor under any client's error on a machine shared with other work.
#
# Usage: bench/fidelity.sh [STREAMS...]            (default: 100 1000 2000)
# Environment:
#   OUT            results folder (default ${TMPDIR:-/tmp}/llmbench-fidelity-<UTC time>)
#   OUTPUT_TOKENS  tokens per request (default 400: 8 s per stream at 50 tokens/s)
#   OUTPUT_TOKENS  may be a distribution, e.g. uniform:200:600: streams then end at different
#                  times, as in real traffic, instead of a whole round ending in one instant
#   ROUNDS         requests per stream (default 2: requests = ROUNDS x STREAMS)
#   WARMUP         --warmup for the run (a request count or a duration, default 0): those
#                  requests are left out of every figure, the fidelity figures included; the
#                  "whole run" column pairs them too
#   LLMBENCH       an llmbench binary to use (default: go build one into OUT)
#   RUN_FLAGS      extra flags for `llmbench run` (e.g. --http2)
#   CLIENT_ENV     environment for the client only (e.g. "GOGC=400")
#   RUN_CMD        the command that runs `run` (default: the llmbench binary); e.g.
#                  "/tmp/clientprof -cpuprofile /tmp/client.pprof --" to profile the client
#   PRIO           a prefix for serve and run, e.g. "nice -n -10": on a shared machine, keeps
#                  other tenants' work from being measured as the client's error
#   SERVE_WRAP, RUN_WRAP  prefixes for serve or run alone (default PRIO), e.g.
#                  SERVE_WRAP="taskset -c 0 env GOMAXPROCS=1" RUN_WRAP="taskset -c 1 env GOMAXPROCS=1"
#                  to give each its own core
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/serve.sh
. bench/serve.sh

streams=("$@")
[ ${#streams[@]} -gt 0 ] || streams=(100 1000 2000)
out=${OUT:-${TMPDIR:-/tmp}/llmbench-fidelity-$(date -u +%Y%m%dT%H%M%SZ)}
output_tokens=${OUTPUT_TOKENS:-400}
warmup=${WARMUP:-0}
rounds=${ROUNDS:-2}
mkdir -p "$out"
bin=${LLMBENCH:-}
if [ -z "$bin" ]; then
	bin=$out/llmbench
	go build -o "$bin" ./cmd/llmbench
fi
stallmon=$out/stallmon
go build -o "$stallmon" ./bench/stallmon
tck=$(getconf CLK_TCK)
run_cmd=${RUN_CMD:-$bin}
serve_wrap=${SERVE_WRAP:-${PRIO:-}}
run_wrap=${RUN_WRAP:-${PRIO:-}}

# cpu_seconds PID: user + system CPU seconds the process has used so far.
cpu_seconds() {
	awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat"
}

table=$out/results.md
{
	echo "| streams | token events/s: planned / sent (median second) | event-time error P50 / P99 / max (ms) | whole run incl. warm-up: P99 / max (ms) | TTFT error P50 / P99 (ms) | ITL error P50 / P99 (ms) | early events | client read lag P50 / P99 (ms) | client CPU (cores) | client max RSS (MiB) | schedule lag P50 / P99 / max (ms) | server CPU (cores) | 1 ms sleeper woke late P50 / P99 / max (ms) | load avg before → after |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$table"

for n in "${streams[@]}"; do
	dir=$out/c$n
	mkdir -p "$dir"
	load_before=$(cut -d' ' -f1 /proc/loadavg)

	# shellcheck disable=SC2086 # the wrappers are word lists
	start_serve "$dir/serve.log" $serve_wrap "$bin" serve --listen 127.0.0.1:0 --sim bench/fast50.yaml --truth "$dir/truth.jsonl"
	serve_cpu0=$(cpu_seconds "$serve_pid")
	# shellcheck disable=SC2086
	${PRIO:-} "$stallmon" >"$dir/stallmon.txt" &
	stallmon_pid=$!
	t0=$(date +%s.%N)

	echo "== $n streams: $bin run --url $url --concurrency $n --requests $((rounds * n)) --output-tokens $output_tokens" >&2
	# shellcheck disable=SC2086 # RUN_FLAGS and CLIENT_ENV are word lists
	env ${CLIENT_ENV:-} $run_wrap /usr/bin/time -o "$dir/client.time" -f "%U %S %e %M" \
		$run_cmd run --url "$url" --concurrency "$n" --requests "$((rounds * n))" \
		--input-tokens 16 --output-tokens "$output_tokens" --warmup "$warmup" --no-progress \
		--output-dir "$dir" ${RUN_FLAGS:-} >"$dir/run.log" 2>&1 || {
		echo "run failed:" >&2
		tail -20 "$dir/run.log" >&2
		kill -INT "$serve_pid" "$stallmon_pid"
		exit 1
	}
	kill -INT "$stallmon_pid"
	wait "$stallmon_pid" || true

	t1=$(date +%s.%N)
	serve_cpu1=$(cpu_seconds "$serve_pid")
	kill -INT "$serve_pid"
	wait "$serve_pid" || true
	load_after=$(cut -d' ' -f1 /proc/loadavg)

	"$bin" fidelity --records "$dir" --truth "$dir/truth.jsonl" --by-second | tee "$dir/fidelity.txt" >&2
	"$bin" fidelity --records "$dir" --truth "$dir/truth.jsonl" --json >"$dir/fidelity.json"
	"$bin" fidelity --records "$dir" --truth "$dir/truth.jsonl" --json --include-warmup --by-second >"$dir/fidelity-all.json"

	read -r cu cs cwall crss <"$dir/client.time"
	f=$dir/fidelity.json
	fa=$dir/fidelity-all.json
	s=$dir/summary.json
	printf '| %d | %s / %s | %s / %s / %s | %s / %s | %s / %s | %s / %s | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s → %s |\n' \
		"$n" "$((50 * n))" "$(jq -r '[.per_second[].count] | sort | .[length / 2 | floor]' "$fa")" \
		"$(jq -r '.event_time_error_ms.p50*1000|round/1000' "$f")" \
		"$(jq -r '.event_time_error_ms.p99*1000|round/1000' "$f")" \
		"$(jq -r '.event_time_error_ms.max*1000|round/1000' "$f")" \
		"$(jq -r '.event_time_error_ms.p99*1000|round/1000' "$fa")" \
		"$(jq -r '.event_time_error_ms.max*1000|round/1000' "$fa")" \
		"$(jq -r '.ttft_error_ms.p50*1000|round/1000' "$f")" \
		"$(jq -r '.ttft_error_ms.p99*1000|round/1000' "$f")" \
		"$(jq -r '.itl_error_ms.p50*1000|round/1000' "$f")" \
		"$(jq -r '.itl_error_ms.p99*1000|round/1000' "$f")" \
		"$(jq -r '.early_events' "$f")" \
		"$(jq -r '.levels[0].read_lag_ms | if . == null then "- (read stamps)" else "\(.p50*1000|round/1000) / \(.p99*1000|round/1000)" end' "$s")" \
		"$(awk -v u="$cu" -v s="$cs" -v w="$cwall" 'BEGIN { printf "%.2f (%.1f s user + %.1f s sys over %.1f s)", (u + s) / w, u, s, w }')" \
		"$(awk -v k="$crss" 'BEGIN { printf "%.0f", k / 1024 }')" \
		"$(jq -r '.levels[0].metrics.schedule_lag_ms.p50*1000|round/1000' "$s")" \
		"$(jq -r '.levels[0].metrics.schedule_lag_ms.p99*1000|round/1000' "$s")" \
		"$(jq -r '.levels[0].metrics.schedule_lag_ms.max*1000|round/1000' "$s")" \
		"$(awk -v a="$serve_cpu0" -v b="$serve_cpu1" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.2f", (b - a) / (t1 - t0) }')" \
		"$(sed -n 's/.*p50 \([0-9.]*\) p99 \([0-9.]*\) p99.9 [0-9.]* max \([0-9.]*\)/\1 \/ \2 \/ \3/p' "$dir/stallmon.txt")" \
		"$load_before" "$load_after" >>"$table"
done

echo >&2
cat "$table"
