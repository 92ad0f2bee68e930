package search

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
)

// threshold is a fake probe: loads up to t pass; it records what was probed.
type threshold struct {
	t      float64
	probed []float64
}

func (f *threshold) probe(load float64) (bool, error) {
	f.probed = append(f.probed, load)
	return load <= f.t, nil
}

func TestConcurrencyGrowsThenBisects(t *testing.T) {
	f := &threshold{t: 23}
	got, err := Largest(context.Background(), Concurrency, 1024, f.probe)
	if err != nil || got != 23 {
		t.Fatalf("Largest = %v, %v; want 23", got, err)
	}
	if want := []float64{1, 2, 4, 8, 16, 32, 24, 20, 22, 23}; !slices.Equal(f.probed, want) {
		t.Errorf("probed %v, want %v", f.probed, want)
	}
}

func TestRateStopsWithinFivePercent(t *testing.T) {
	f := &threshold{t: 3.3}
	got, err := Largest(context.Background(), Rate, 1000, f.probe)
	if err != nil {
		t.Fatal(err)
	}
	if got > 3.3 || got < 3.3/1.05 {
		t.Errorf("Largest = %v, want within 5%% below 3.3", got)
	}
	if !slices.Equal(f.probed[:3], []float64{1, 2, 4}) || f.probed[3] != 3 {
		t.Errorf("probed %v: want 1, 2, 4, then the midpoint 3", f.probed)
	}
}

func TestLimitPasses(t *testing.T) {
	f := &threshold{t: math.Inf(1)}
	got, err := Largest(context.Background(), Concurrency, 12, f.probe)
	if err != nil || got != 12 {
		t.Fatalf("Largest = %v, %v; want the limit 12", got, err)
	}
	if want := []float64{1, 2, 4, 8, 12}; !slices.Equal(f.probed, want) {
		t.Errorf("probed %v, want %v (capped at the limit)", f.probed, want)
	}
}

func TestNothingPasses(t *testing.T) {
	f := &threshold{t: 0}
	if got, err := Largest(context.Background(), Concurrency, 64, f.probe); err != nil || got != 0 || len(f.probed) != 1 {
		t.Errorf("concurrency: Largest = %v, %v after %v; want 0 after probing 1 alone", got, err, f.probed)
	}
	f = &threshold{t: 0}
	got, err := Largest(context.Background(), Rate, 64, f.probe)
	if err != nil || got != 0 {
		t.Fatalf("rate: Largest = %v, %v; want 0", got, err)
	}
	if last := f.probed[len(f.probed)-1]; last > 0.02 || len(f.probed) > 10 {
		t.Errorf("rate: probed %v; want halving down to about 0.01 req/s", f.probed)
	}
}

func TestErrorStops(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	got, err := Largest(context.Background(), Concurrency, 64, func(load float64) (bool, error) {
		n++
		if load == 4 {
			return false, boom
		}
		return true, nil
	})
	if !errors.Is(err, boom) || got != 2 || n != 3 {
		t.Errorf("Largest = %v, %v after %d probes; want 2, boom after 3", got, err, n)
	}
}

func TestCancelledContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var probed []float64
	got, err := Largest(ctx, Concurrency, 1024, func(load float64) (bool, error) {
		probed = append(probed, load)
		if len(probed) == 3 {
			cancel()
		}
		return load <= 100, nil
	})
	if err != nil || got != 4 || len(probed) != 3 {
		t.Errorf("Largest = %v, %v after %v; want 4 after 3 probes", got, err, probed)
	}
}

func TestGridStepsAboutTheAnswer(t *testing.T) {
	// 1% of 181 about it, a load already run moved outward by one.
	got := Grid(Concurrency, 181, 1024, []float64{128, 256, 192, 160, 176, 184, 180, 182, 181})
	if want := []float64{177, 179, 183, 185, 186}; !slices.Equal(got, want) {
		t.Errorf("Grid = %v, want %v", got, want)
	}
	if got := Grid(Concurrency, 1024, 1024, nil); got != nil {
		t.Errorf("Grid at the search's bound = %v, want none", got)
	}
	if got := Grid(Concurrency, 0, 1024, nil); got != nil {
		t.Errorf("Grid when nothing passed = %v, want none", got)
	}
	got = Grid(Rate, 10, 10.25, nil)
	if want := []float64{9.8, 9.9, 10.1, 10.2}; len(got) != len(want) || slices.ContainsFunc(got, func(x float64) bool {
		return !slices.ContainsFunc(want, func(w float64) bool { return math.Abs(x-w) < 1e-9 })
	}) {
		t.Errorf("Grid(rate) = %v, want 9.8 9.9 10.1 10.2 (10.3 is past the bound)", got)
	}
}

// TestParseAxis: the two axes by name; anything else refused.
func TestParseAxis(t *testing.T) {
	if a, err := ParseAxis("rate"); a != Rate || err != nil {
		t.Errorf("rate: %q, %v", a, err)
	}
	if a, err := ParseAxis("concurrency"); a != Concurrency || err != nil {
		t.Errorf("concurrency: %q, %v", a, err)
	}
	if _, err := ParseAxis("foo"); err == nil || err.Error() != `"foo" is not concurrency or rate` {
		t.Errorf("foo: %v", err)
	}
}
