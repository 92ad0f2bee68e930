package validate

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite validation/mlperf_v5.1.json from ../shared")

const (
	groundtruthDir = "../../../shared/groundtruth"
	mlperfTable    = "../../validation/mlperf_v5.1.json"
)

// MLPerfTableDescription heads the committed table.
const mlperfTableDescription = "MLPerf Inference v5.1 Server and Interactive rows (Apache-2.0), converted from " +
	"../shared/groundtruth/mlperf_v5.1_llm_server.json by internal/validate; regenerate with " +
	"go test ./internal/validate -run TestSharedGroundtruth -update"

// groundtruth returns ../shared/groundtruth: not committed (InferenceX is GPL-3.0, the
// inference-perf rows have no licence), so a test that needs it skips without it, or fails
// when LLMBENCH_REQUIRE_SHARED is set, as in CI.
func groundtruth(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(groundtruthDir); err != nil {
		if os.Getenv("LLMBENCH_REQUIRE_SHARED") != "" {
			t.Fatalf("LLMBENCH_REQUIRE_SHARED is set but ../shared/groundtruth is absent: %v", err)
		}
		t.Skipf("needs ../shared/groundtruth (not committed: its licences): %v", err)
	}
	return groundtruthDir
}

// TestSharedGroundtruth: the groundtruth files parse, every row either simulates or is
// skipped with a reason, and the committed MLPerf table is their conversion.
func TestSharedGroundtruth(t *testing.T) {
	dir := groundtruth(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no groundtruth files in %s: %v", dir, err)
	}
	for _, p := range paths {
		rows, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			t.Errorf("%s: no rows", p)
		}
		if filepath.Base(p) == "mlperf_v5.1_llm_server.json" {
			checkCommittedTable(t, rows)
		}
		// Whether a row simulates is decided by its deployment, not its length: short rows keep
		// the test to seconds (the default tier runs it under -race).
		for i := range rows {
			rows[i].Workload.Requests, rows[i].Workload.Warmup = min(rows[i].Workload.Requests, 50), 0
		}
		results, err := Run(context.Background(), rows, 1, 0, false)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, r := range results {
			if r.Skipped == "" && len(r.ErrorPct) == 0 {
				t.Errorf("%s: row %s neither simulated to a figure it measured nor skipped", p, r.ID)
			}
		}
	}
}

func checkCommittedTable(t *testing.T, rows []Row) {
	t.Helper()
	if *update {
		if err := WriteTable(mlperfTable, mlperfTableDescription, rows); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(mlperfTable)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "t.json")
	if err := WriteTable(tmp, mlperfTableDescription, rows); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(tmp)
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the conversion of ../shared's MLPerf rows: rerun with -update", mlperfTable)
	}
}
