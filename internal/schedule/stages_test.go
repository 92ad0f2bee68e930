package schedule

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseStages(t *testing.T) {
	st, err := ParseStages("30s:2, 60s:2->16,30s:16")
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != StageRate || len(st.Stages) != 3 || st.Stages[1] != (Stage{60 * time.Second, 2, 16}) {
		t.Fatalf("parsed %+v", st)
	}
	if st.Total() != 2*time.Minute || st.Max() != 16 {
		t.Errorf("total %v max %g", st.Total(), st.Max())
	}
	if got := st.String(); got != "30s:2,1m0s:2->16,30s:16" {
		t.Errorf("String = %q", got)
	}
	back, err := ParseStages(st.String())
	if err != nil || back.String() != st.String() {
		t.Errorf("round trip: %v %v", back, err)
	}
	c, err := ParseStages("concurrency:10s:1->4")
	if err != nil || c.Kind != StageConcurrency {
		t.Fatalf("%+v %v", c, err)
	}
	for spec, want := range map[string]string{
		"":                    "no stage",
		"30s":                 "DURATION:VALUE",
		"x:2":                 "not a duration",
		"30s:two":             "not a number",
		"30s:2->":             "not a number",
		"0s:2":                "positive duration",
		"30s:-1":              "finite number >= 0",
		"30s:0,10s:0":         "no load",
		"concurrency:30s:1.5": "whole number",
		"30s:-1,0s:2":         "stage 2 lasts 0s", // every problem, not the first
	} {
		_, err := ParseStages(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStages(%q) = %v, want an error containing %q", spec, err, want)
		}
	}
}

func TestStagesAtIndexBounds(t *testing.T) {
	st, _ := ParseStages("10s:2,10s:2->12,10s:0")
	for _, c := range []struct {
		t time.Duration
		v float64
		i int
	}{{0, 2, 1}, {9 * time.Second, 2, 1}, {10 * time.Second, 2, 2}, {15 * time.Second, 7, 2}, {20 * time.Second, 0, 3}, {30 * time.Second, 0, 3}, {-1, 0, 0}} {
		if v := st.At(c.t); math.Abs(v-c.v) > 1e-9 {
			t.Errorf("At(%v) = %g, want %g", c.t, v, c.v)
		}
		if i := st.Index(c.t); i != c.i {
			t.Errorf("Index(%v) = %d, want %d", c.t, i, c.i)
		}
	}
	if s, e := st.Bounds(2); s != 10*time.Second || e != 20*time.Second {
		t.Errorf("Bounds(2) = %v, %v", s, e)
	}
}

func TestStagesRise(t *testing.T) {
	st, _ := ParseStages("concurrency:10s:2,10s:2->12,10s:4")
	for _, c := range []struct {
		now time.Duration
		n   int
		at  time.Duration
		ok  bool
	}{
		{0, 2, 0, true},                // held from the start
		{0, 3, 11 * time.Second, true}, // the ramp passes 3 a tenth of the way in
		{0, 12, 0, false},              // 12 only at the ramp's (excluded) end
		{12 * time.Second, 3, 12 * time.Second, true},
		{12 * time.Second, 11, 19 * time.Second, true},
		{21 * time.Second, 5, 0, false}, // the last stage holds 4
		{21 * time.Second, 4, 21 * time.Second, true},
	} {
		at, ok := st.Rise(c.now, c.n)
		if at != c.at || ok != c.ok {
			t.Errorf("Rise(%v, %d) = %v, %v; want %v, %v", c.now, c.n, at, ok, c.at, c.ok)
		}
		if ok && st.Count(at) < c.n {
			t.Errorf("Count(Rise(%v, %d)) = %d", c.now, c.n, st.Count(at))
		}
	}
}

// Warp turns unit-rate arrivals into arrivals at the schedule's rate: the count of arrivals
// by each instant is the rate's integral, on a ramp as on a step.
func TestStagesWarpFollowsTheRate(t *testing.T) {
	st, _ := ParseStages("30s:2,60s:2->16,30s:16,20s:0,10s:4")
	p := NewPlan(Arrival{Kind: Constant}, 1, 1)
	var last time.Duration
	count := map[int]int{} // by stage
	for {
		at, ok := st.Warp(p.Next())
		if !ok {
			break
		}
		if at < last {
			t.Fatalf("warped due times went back: %v after %v", at, last)
		}
		last = at
		count[st.Index(at)]++
	}
	// Expected arrivals: 60, 540, 480, 0, 40 (constant arrivals: within one of each).
	for i, want := range map[int]int{1: 60, 2: 540, 3: 480, 4: 0, 5: 40} {
		if d := count[i] - want; d < -1 || d > 1 {
			t.Errorf("stage %d: %d arrivals, want %d ± 1", i, count[i], want)
		}
	}
	if _, ok := st.Warp(1121 * time.Second); ok {
		t.Error("Warp past the schedule's end (1120 arrivals' worth) should say so")
	}
	// A ramp from 0: the first arrivals come late in it, as the rate rises.
	r, _ := ParseStages("10s:0->10")
	at, _ := r.Warp(25 * time.Second) // half the 50 arrivals' worth: at 10/sqrt(2) s
	if want := time.Duration(math.Round(10 / math.Sqrt2 * 1e9)); (at - want).Abs() > time.Microsecond {
		t.Errorf("Warp(25s) on 0->10 = %v, want %v", at, want)
	}
}
