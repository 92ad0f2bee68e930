package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/fidelity"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// The results of deploy/kubernetes/ci/test.sh on the CI cluster: for each kind of loop, a
// run of 2 shards merged (ci-KIND/merged) and the same run from one pod (ci-KIND-single/
// shard-0), both against one `llmbench serve` Deployment whose --truth file (truth.jsonl)
// holds every request it served with a hash of its prompt.
const k8sResultsEnv = "LLMBENCH_K8S_RESULTS"

// Tolerances of the merged run's figures against the single process's. Both ran the same
// requests against one simulated server on the same 2-CPU node, one after the other; what
// moves their figures is that node's scheduling of the clients beside the server (measured
// in docs/testing.md).
const (
	dueTolerance        = 10 * time.Microsecond // records' offsets are in µs, rebased by merge
	maxStartSpread      = time.Second           // merge's --max-start-spread: the loads overlapped
	throughputTolerance = 0.10
	latencyTolerance    = 0.20
	latencyFloor        = 1.0 // ms: below it a figure's scheduling noise is most of it
)

// A sharded run on Kubernetes is the same run as one process's: the same requests (level,
// index, prompt, lengths), at the same due times for an open loop, the same counts, and
// throughput and latency within the tolerances above.
func TestShardedRunIsTheSameRun(t *testing.T) {
	root := k8sResults(t)
	truth := readTruth(t, filepath.Join(root, "truth.jsonl"))
	for _, kind := range []string{"open", "closed"} {
		t.Run(kind, func(t *testing.T) {
			merged := readK8sRun(t, filepath.Join(root, "ci-"+kind, "merged"))
			single := readK8sRun(t, filepath.Join(root, "ci-"+kind+"-single", "shard-0"))
			shifts := shardShifts(t, filepath.Join(root, "ci-"+kind), merged.sum.StartedAt)
			sameRequests(t, kind, merged, single, truth, shifts)
			sameFigures(t, kind, merged.sum, single.sum)
		})
	}
}

// The same manifests against llama.cpp's llama-server deployed in the cluster: 2 shards whose
// merge is the whole plan, every request answered, nothing to warn about.
func TestShardedRunOnLlamaCpp(t *testing.T) {
	root := k8sResults(t)
	r := readK8sRun(t, filepath.Join(root, "ci-llamacpp", "merged"))
	if n := len(r.sum.Load.MergedShards); n != 2 {
		t.Errorf("%d shards merged, want 2", n)
	}
	// A shard throttled by its CPU limit can wake tens of ms late; merge says so, and
	// refuses the shards only past --max-start-spread.
	if w := r.sum.Load.MergeWarnings; len(w) > 0 {
		t.Logf("merge warned: %s", strings.Join(w, "; "))
	}
	want := r.sum.Load.Requests + r.sum.Load.Warmup
	if len(r.recs) != want {
		t.Errorf("%d requests merged, want the plan's %d", len(r.recs), want)
	}
	for _, l := range r.sum.Levels {
		if l.Failed > 0 || l.Completed != r.sum.Load.Requests {
			t.Errorf("level %s: %d completed, %d failed of %d", l.Name, l.Completed, l.Failed, r.sum.Load.Requests)
		}
		ttft, _ := l.Metrics.Stat("ttft_ms").Get(50)
		t.Logf("llama-server, 2 shards merged: %d requests, %.2f req/s, %.1f output tok/s, TTFT P50 %.1f ms", l.Completed, l.RequestThroughput, l.OutputThroughput, ttft.Value)
	}
}

// k8sResults is the folder of the cluster's results; the test skips without one, or fails
// when LLMBENCH_REQUIRE_K8S says there must be one.
func k8sResults(t *testing.T) string {
	t.Helper()
	root := os.Getenv(k8sResultsEnv)
	if root == "" {
		if os.Getenv("LLMBENCH_REQUIRE_K8S") != "" {
			t.Fatalf("LLMBENCH_REQUIRE_K8S is set but %s is not: deploy/kubernetes/ci/test.sh runs this test against the cluster's results", k8sResultsEnv)
		}
		t.Skipf("no cluster results: set %s (deploy/kubernetes/ci/test.sh does)", k8sResultsEnv)
	}
	return root
}

type k8sRun struct {
	dir  string
	sum  *report.Summary
	recs map[[2]int]record.Record // by level and index
}

func readK8sRun(t *testing.T, dir string) k8sRun {
	t.Helper()
	sum, err := report.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	path, err := record.Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := record.ReadAll(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := k8sRun{dir: dir, sum: sum, recs: map[[2]int]record.Record{}}
	for _, rec := range recs {
		k := [2]int{rec.Level, rec.Index}
		if _, dup := r.recs[k]; dup {
			t.Errorf("%s: request %d of level %d twice", dir, rec.Index, rec.Level)
		}
		r.recs[k] = rec
	}
	return r
}

func readTruth(t *testing.T, path string) map[string]*fidelity.Truth {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the server's truth file: %v", err)
	}
	defer f.Close()
	truth, err := fidelity.ReadTruth(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return truth
}

// shardShifts is how far each shard's t = 0 fell after the merged run's (the earliest
// shard's): merge moves the shard's records by it. The spread is how late the last shard woke
// for the common --start-at (a pod throttled by its CPU limit wakes tens of ms late on a busy
// node); merge refuses shards beyond maxStartSpread, whose loads did not overlap.
func shardShifts(t *testing.T, dir string, t0 time.Time) []time.Duration {
	t.Helper()
	var shifts []time.Duration
	for i := 0; ; i++ {
		sum, err := report.ReadDir(filepath.Join(dir, fmt.Sprintf("shard-%d", i)))
		if err != nil {
			break
		}
		d := sum.StartedAt.Truncate(time.Microsecond).Sub(t0)
		delay := "none"
		if sum.StartDelayMs != nil {
			delay = fmt.Sprintf("%.1f ms", *sum.StartDelayMs)
		}
		t.Logf("shard %d started %s after the first, %s after --start-at", i, d, delay)
		if d > maxStartSpread {
			t.Errorf("shard %d started %s after the first (merge refuses more than %s)", i, d, maxStartSpread)
		}
		shifts = append(shifts, d)
	}
	if len(shifts) != 2 {
		t.Fatalf("%s: %d shards' summaries, want 2", dir, len(shifts))
	}
	return shifts
}

func sameRequests(t *testing.T, kind string, merged, single k8sRun, truth map[string]*fidelity.Truth, shifts []time.Duration) {
	if len(merged.recs) != len(single.recs) {
		t.Errorf("%d requests merged, %d from one process", len(merged.recs), len(single.recs))
	}
	var worstDue time.Duration
	dues := make([][]time.Duration, len(shifts))
	var failed int
	for k, s := range single.recs {
		m, ok := merged.recs[k]
		if !ok {
			t.Errorf("request %d of level %d: sent by one process, by no shard", k[1], k[0])
			continue
		}
		if m.Error != nil || s.Error != nil {
			failed++
			continue
		}
		mt, mok := truth[m.ResponseID]
		st, sok := truth[s.ResponseID]
		switch {
		case !mok || !sok:
			t.Errorf("request %d of level %d: response %q or %q is not in the server's truth file", k[1], k[0], m.ResponseID, s.ResponseID)
		case mt.PromptSHA256 != st.PromptSHA256 || mt.PromptTokens != st.PromptTokens:
			t.Errorf("request %d of level %d: the server was sent different prompts (%s, %d tokens merged; %s, %d from one process)",
				k[1], k[0], mt.PromptSHA256, mt.PromptTokens, st.PromptSHA256, st.PromptTokens)
		}
		if m.InputTokens != s.InputTokens || m.OutputTokens != s.OutputTokens || m.Warmup != s.Warmup {
			t.Errorf("request %d of level %d: %d → %d tokens (warm-up %v) merged, %d → %d (%v) from one process",
				k[1], k[0], m.InputTokens, m.OutputTokens, m.Warmup, s.InputTokens, s.OutputTokens, s.Warmup)
		}
		// Shard i mod N sent request i: its due times are the plan's, moved by when that
		// shard's level began (its start against the first shard's, and its own time from
		// t = 0 to the level's start, as the single run's is).
		sh := k[1] % len(shifts)
		dues[sh] = append(dues[sh], m.Scheduled-s.Scheduled)
	}
	for k := range merged.recs {
		if _, ok := single.recs[k]; !ok {
			t.Errorf("request %d of level %d: sent by a shard, not by one process", k[1], k[0])
		}
	}
	if failed > 0 {
		t.Errorf("%d requests failed", failed)
	}
	for sh, d := range dues {
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		moved := d[len(d)/2]
		worstDue = max(worstDue, (d[0] - moved).Abs(), (d[len(d)-1] - moved).Abs())
		t.Logf("%s loop: shard %d's due times are the single run's moved by %s (its start %s after the first shard's)", kind, sh, moved, shifts[sh])
	}
	// An open loop's due times are the plan's, moved by the shard's start against the
	// earliest; a closed loop sends when a worker is free, which each run's own latencies
	// decide.
	t.Logf("%s loop: %d requests in both, prompts alike by the server's hash; due times, each shard's moved by its own start, differ by at most %s", kind, len(single.recs), worstDue)
	if kind == "open" && worstDue > dueTolerance {
		t.Errorf("an open loop's due time differs by %s from the single run's beyond its shard's start: not the same plan", worstDue)
	}
}

func sameFigures(t *testing.T, kind string, merged, single *report.Summary) {
	if len(merged.Levels) != len(single.Levels) {
		t.Fatalf("%d levels merged, %d from one process", len(merged.Levels), len(single.Levels))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-24s %12s %12s %8s\n", "figure", "one process", "2 shards", "diff")
	for i, m := range merged.Levels {
		s := single.Levels[i]
		if m.Completed != s.Completed || m.Failed != s.Failed {
			t.Errorf("level %s: %d completed, %d failed merged; %d, %d from one process", m.Name, m.Completed, m.Failed, s.Completed, s.Failed)
		}
		check := func(name string, one, two, tol, floor float64) {
			d := (two - one) / one
			fmt.Fprintf(&table, "%-24s %12.3f %12.3f %+7.1f%%\n", name, one, two, 100*d)
			if math.IsNaN(d) || math.Abs(two-one) > max(tol*one, floor) {
				t.Errorf("level %s: %s %.3f merged against %.3f from one process (%+.1f %%, bound ±%.0f %% or %g)", m.Name, name, two, one, 100*d, 100*tol, floor)
			}
		}
		check("request_throughput", s.RequestThroughput, m.RequestThroughput, throughputTolerance, 0)
		check("output_throughput", s.OutputThroughput, m.OutputThroughput, throughputTolerance, 0)
		for _, key := range []string{"ttft_ms", "tpot_ms", "e2el_ms"} {
			one, ok1 := s.Metrics.Stat(key).Get(50)
			two, ok2 := m.Metrics.Stat(key).Get(50)
			if !ok1 || !ok2 {
				t.Errorf("level %s: no %s p50", m.Name, key)
				continue
			}
			check(key+".p50", one.Value, two.Value, latencyTolerance, latencyFloor)
		}
	}
	t.Logf("%s loop, one process against the merge of 2 shards:\n%s", kind, table.String())
}
