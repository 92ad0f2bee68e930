#!/usr/bin/env bash
# Runs every Go fuzz target in the repository briefly, one at a time (go test -fuzz takes a
# single target). Targets are found by grepping for `func FuzzXxx(` in *_test.go files, so
# new ones are picked up without editing this script.
#
#   FUZZTIME=10s    how long each target runs (default 10s; any -fuzztime value, e.g. 5000x)
#   FUZZ_MATCH=RE   only targets whose "dir/Name" matches this extended regex
#
# A failing target does not stop the others: every target runs, the failures are listed at
# the end with the input Go wrote under the package's testdata/fuzz/, and the exit status is
# 1 (a bare end-of-run deadline failure is run once more; see below). With the default FUZZTIME the whole run takes about 2-3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
fuzztime=${FUZZTIME:-10s}
match=${FUZZ_MATCH:-.}

# "dir name" pairs, sorted, from every test file outside testdata, .git and node_modules.
mapfile -t targets < <(
  grep -rEo --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git --exclude-dir=node_modules \
    '^func Fuzz[A-Za-z0-9_]*\(' . |
    sed -E 's#^\./(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' |
    sort -u
)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi

start=$SECONDS
failed=()
ran=0
for t in "${targets[@]}"; do
  dir=${t% *}
  name=${t#* }
  if ! [[ "$dir/$name" =~ $match ]]; then
    continue
  fi
  ran=$((ran + 1))
  t0=$SECONDS
  echo "== $dir $name (-fuzztime $fuzztime)"
  # Go's coordinator can fail a target with a bare "context deadline exceeded" as -fuzztime
  # ends on a loaded machine (golang/go#75804): no input is written and nothing reproduces.
  # Such a run, and only such, is run once more; a second failure of any kind stands.
  for try in 1 2; do
    set +e
    out=$(go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -timeout=10m "./$dir" 2>&1)
    status=$?
    set -e
    tail -n 40 <<<"$out"
    if [ "$status" -eq 0 ] || [ "$try" -eq 2 ] ||
      ! grep -q '^    context deadline exceeded$' <<<"$out" || grep -q 'Failing input written' <<<"$out"; then
      break
    fi
    echo "   the fuzzing coordinator's end-of-run deadline race, no input written: once more"
  done
  echo "   $((SECONDS - t0)) s, exit $status"
  if [ "$status" -ne 0 ]; then
    failed+=("$dir $name")
  fi
done

echo
echo "fuzz.sh: $ran targets in $((SECONDS - start)) s"
if [ "$ran" -eq 0 ]; then
  echo "fuzz.sh: FUZZ_MATCH=$match matched no target" >&2
  exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed:" >&2
  for f in "${failed[@]}"; do
    dir=${f% *}
    name=${f#* }
    echo "  $dir $name; new inputs:" >&2
    # Print each new input too: on CI the file is lost with the machine.
    git status --porcelain --untracked-files=all -- "$dir/testdata/fuzz/$name" 2>/dev/null |
      while read -r _ file; do
        echo "    $file:" >&2
        head -c 2000 "$file" | sed 's/^/      /' >&2
      done || true
  done
  exit 1
fi
