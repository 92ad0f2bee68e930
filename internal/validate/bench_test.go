package validate

import (
	"context"
	"testing"
)

// BenchmarkSimulateLargestMLPerfRow simulates the committed MLPerf table's busiest Poisson
// row (the most requests: 660k at 1100 queries/s), the row that bounds validate's time.
func BenchmarkSimulateLargestMLPerfRow(b *testing.B) {
	rows, err := Load(mlperfTable)
	if err != nil {
		b.Fatal(err)
	}
	big := -1
	for i, r := range rows {
		if r.Skip == "" && (big < 0 || r.Workload.Requests > rows[big].Workload.Requests) {
			big = i
		}
	}
	if big < 0 {
		b.Fatal("no runnable row in the committed MLPerf table")
	}
	r := rows[big]
	b.Logf("row %s: %d requests at %g/s", r.ID, r.Workload.Requests, r.Workload.Rate)
	for b.Loop() {
		res, err := Simulate(context.Background(), r, 1, b.TempDir())
		if err != nil || res.Skipped != "" {
			b.Fatalf("row %s: %v %s", r.ID, err, res.Skipped)
		}
	}
}
