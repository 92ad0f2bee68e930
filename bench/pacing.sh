#!/usr/bin/env bash
# bench/pacing.sh: does `llmbench serve` send each token event when its engine step ends?
#
# For each concurrency it runs `llmbench simulate` (the engine on a virtual clock: the step
# times the profile predicts), then `llmbench serve --truth` with the same profile and
# `llmbench run` against it with the same workload, then `llmbench fidelity`. It prints a
# markdown table: the client's ITL P50 against the simulated one (at concurrency 1 every
# step is the same sequence's, so the simulated ITL is the step time), how late the server
# sent each event after its step ended and the ITL error that adds (from the truth's
# step_unix), and the client's own event-time error.
#
# Usage: bench/pacing.sh [CONCURRENCY...]         (default: 1 8 64)
# Environment:
#   OUT       results folder (default ${TMPDIR:-/tmp}/llmbench-pacing-<UTC time>)
#   SIM       the profile (default h200-llama-3.1-8b, serve's default)
#   REQUESTS  requests per level (default: the larger of 50 and 4 x concurrency)
#   INPUT_TOKENS, OUTPUT_TOKENS  per request (default 128 and 128)
#   LLMBENCH  an llmbench binary to use (default: go build one into OUT)
#   SERVE_BIN the binary whose `serve` is measured (default LLMBENCH), e.g. one built from an
#             older commit; a serve whose truth has no step_unix leaves the server columns "-"
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/serve.sh
. bench/serve.sh

levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(1 8 64)
out=${OUT:-${TMPDIR:-/tmp}/llmbench-pacing-$(date -u +%Y%m%dT%H%M%SZ)}
sim=${SIM:-h200-llama-3.1-8b}
input_tokens=${INPUT_TOKENS:-128}
output_tokens=${OUTPUT_TOKENS:-128}
mkdir -p "$out"
bin=${LLMBENCH:-}
if [ -z "$bin" ]; then
	bin=$out/llmbench
	go build -o "$bin" ./cmd/llmbench
fi

# r3 FILE FILTER: a figure in ms, to 3 decimals.
r3() { jq -r "$2 * 1000 | round / 1000" "$1"; }
# srv FILE FILTER: a server column's figure; "-" when the truth had no step_unix.
srv() { jq -r "if (.server_event_delay_ms.count // 0) == 0 then \"-\" else $2 * 1000 | round / 1000 end" "$1"; }

table=$out/results.md
{
	echo "| concurrency | simulated ITL P50 (ms) | client ITL P50 (ms) | client − simulated | server: event sent − step end P50 / P99 (ms) | server ITL error P50 / P99 (ms) | client event-time error P50 / P99 (ms) |"
	echo "|---|---|---|---|---|---|---|"
} >"$table"

for c in "${levels[@]}"; do
	n=${REQUESTS:-$((c * 4 > 50 ? c * 4 : 50))}
	dir=$out/c$c
	mkdir -p "$dir"
	load=(--concurrency "$c" --requests "$n" --input-tokens "$input_tokens" --output-tokens "$output_tokens" --no-progress)
	"$bin" simulate --sim "$sim" "${load[@]}" --output-dir "$dir/simulate" >"$dir/simulate.log" 2>&1

	start_serve "$dir/serve.log" "${SERVE_BIN:-$bin}" serve --listen 127.0.0.1:0 --sim "$sim" --truth "$dir/truth.jsonl"
	echo "== concurrency $c: $bin run --url $url/v1 ${load[*]}" >&2
	"$bin" run --url "$url/v1" "${load[@]}" --output-dir "$dir/run" >"$dir/run.log" 2>&1 || {
		echo "run failed:" >&2
		tail -20 "$dir/run.log" >&2
		kill -INT "$serve_pid"
		exit 1
	}
	kill -INT "$serve_pid"
	wait "$serve_pid" || true

	"$bin" fidelity --records "$dir/run" --truth "$dir/truth.jsonl" | tee "$dir/fidelity.txt" >&2
	"$bin" fidelity --records "$dir/run" --truth "$dir/truth.jsonl" --json >"$dir/fidelity.json"
	f=$dir/fidelity.json
	sim_itl=$(r3 "$dir/simulate/summary.json" .levels[0].metrics.itl_ms.p50)
	run_itl=$(r3 "$dir/run/summary.json" .levels[0].metrics.itl_ms.p50)
	printf '| %d | %s | %s | %s | %s / %s | %s / %s | %s / %s |\n' "$c" "$sim_itl" "$run_itl" \
		"$(awk -v a="$run_itl" -v b="$sim_itl" 'BEGIN { printf "%+.2f%%", 100 * (a / b - 1) }')" \
		"$(srv "$f" .server_event_delay_ms.p50)" "$(srv "$f" .server_event_delay_ms.p99)" \
		"$(srv "$f" .server_itl_error_ms.p50)" "$(srv "$f" .server_itl_error_ms.p99)" \
		"$(r3 "$f" .event_time_error_ms.p50)" "$(r3 "$f" .event_time_error_ms.p99)" >>"$table"
done

echo >&2
cat "$table"
