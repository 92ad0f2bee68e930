package predict

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// A band is the normal prediction interval of ln(measured/predicted), checked against the
// formula written out for five rows; a group of fewer than MinRows rows takes the pooled
// band, and a family and GPU no row measured a wider one.
func TestNewTableBands(t *testing.T) {
	g := Group{Family: "m", GPU: "h100", Engine: "vllm", Load: Closed}
	small := Group{Family: "m", GPU: "b200", Engine: "vllm", Load: Closed}
	var rs []Residual
	xs := []float64{0.05, 0.10, 0.15, 0.08, 0.12}
	for _, x := range xs {
		rs = append(rs, Residual{Group: g, Source: "a", Figure: "tpot_ms.p50", Predicted: 10, Actual: 10 * math.Exp(x)})
	}
	rs = append(rs, Residual{Group: small, Source: "b", Figure: "tpot_ms.p50", Predicted: 10, Actual: 20})
	tab := NewTable(rs, "test")
	b := tab.Groups["m h100 vllm closed"]["tpot_ms.p50"]
	mean, ss := 0.0, 0.0
	for _, x := range xs {
		mean += x / 5
	}
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	h := 2.1318 * math.Sqrt(ss/4) * math.Sqrt(1+1.0/5) // t(0.95, 4)
	if !near(b.Lo, math.Exp(mean-h)) || !near(b.Hi, math.Exp(mean+h)) || b.Rows != 5 {
		t.Errorf("band %+v, want [%g, %g] of 5 rows", b, math.Exp(mean-h), math.Exp(mean+h))
	}
	if _, ok := tab.Groups["m b200 vllm closed"]; ok {
		t.Error("a group of one row has a band of its own")
	}
	if p := tab.Pooled["tpot_ms.p50"]; p.Rows != 6 || !(p.Hi > b.Hi) {
		t.Errorf("pooled %+v should hold all 6 rows and be wider than the group's", p)
	}
	own := tab.For("m", "h100", "vllm")
	if own.ByLoad[Closed]["tpot_ms.p50"] != b || !strings.Contains(own.Basis[Closed], "5 validation rows of m h100 vllm closed") {
		t.Errorf("own group: %+v", own)
	}
	if o := tab.For("m", "h100", "vllm").ByLoad[Poisson]["tpot_ms.p50"]; o != tab.Pooled["tpot_ms.p50"] {
		t.Errorf("a group without rows (poisson) takes the pooled band: %+v", o)
	}
	un := tab.For("other", "mi300x", "vllm")
	w := un.ByLoad[Closed]["tpot_ms.p50"]
	pw, uw := math.Log(tab.Pooled["tpot_ms.p50"].Hi/tab.Pooled["tpot_ms.p50"].Lo), math.Log(w.Hi/w.Lo)
	if f := tab.FamilyWidening * tab.GPUWidening; !near(uw, f*pw) || !strings.Contains(un.Basis[Closed], "no row measured the model family other or the GPU mi300x") {
		t.Errorf("an unseen family and GPU: log-width %g, want %g × %g; basis %q", uw, f, pw, un.Basis[Closed])
	}
}

// A group without rows takes the pooled band of its kind of loop's groups, where two or
// more of them have rows: a new open loop's from the open loops' errors (queueing near
// capacity multiplies them), a new closed loop's from the closed loops'; a figure its loop's
// groups do not give, every group's, and its basis says which.
func TestPooledByLoop(t *testing.T) {
	var rs []Residual
	add := func(fam, load, fig string, xs ...float64) {
		for _, x := range xs {
			rs = append(rs, Residual{Group: Group{Family: fam, GPU: "h100", Engine: "vllm", Load: load}, Figure: fig, Predicted: 10, Actual: 10 * math.Exp(x)})
		}
	}
	add("a", Closed, "tpot_ms.p50", 0.0, 0.05, -0.05)
	add("b", Closed, "tpot_ms.p50", 0.1, 0.05, 0.15)
	add("c", Poisson, "tpot_ms.p50", 1.0, -0.5, 2.0)
	add("d", Constant, "tpot_ms.p50", -1.0, 0.5, 1.5)
	add("a", Closed, "ttft_ms.p50", 0.0, 0.1)
	add("c", Poisson, "ttft_ms.p50", 0.5, 1.5)
	add("b", Closed, "ttft_ms.p50", 0.2, 0.3)
	tab := NewTable(rs, "")
	closed, opened := tab.PooledByLoop[Closed]["tpot_ms.p50"], tab.PooledByLoop[open]["tpot_ms.p50"]
	all := tab.Pooled["tpot_ms.p50"]
	if closed.Groups != 2 || opened.Groups != 2 || all.Groups != 4 {
		t.Fatalf("pooled over %d closed, %d open, %d groups; want 2, 2, 4", closed.Groups, opened.Groups, all.Groups)
	}
	if !(math.Log(closed.Hi/closed.Lo) < math.Log(all.Hi/all.Lo) && math.Log(all.Hi/all.Lo) < math.Log(opened.Hi/opened.Lo)) {
		t.Errorf("closed %+v, all %+v, open %+v: want the closed loops' narrowest and the open loops' widest", closed, all, opened)
	}
	s := tab.For("a", "h100", "sglang") // no rows of its own at any load
	if s.ByLoad[Closed]["tpot_ms.p50"] != closed || s.ByLoad[Gamma]["tpot_ms.p50"] != opened || s.ByLoad[Poisson]["tpot_ms.p50"] != opened {
		t.Errorf("a new closed loop takes the closed loops' band and a new open loop the open loops': %+v", s.ByLoad)
	}
	if _, ok := tab.PooledByLoop[open]["ttft_ms.p50"]; ok {
		t.Error("one open group's ttft_ms.p50 pooled by itself")
	}
	if s.ByLoad[Poisson]["ttft_ms.p50"] != tab.Pooled["ttft_ms.p50"] {
		t.Errorf("a figure one open group gives takes every group's band: %+v", s.ByLoad[Poisson]["ttft_ms.p50"])
	}
	if b := s.Basis[Poisson]; !strings.Contains(b, "the validation's open-loop groups' errors (every group's for ttft_ms.p50)") {
		t.Errorf("open-loop basis %q", b)
	}
	if b := s.Basis[Closed]; !strings.Contains(b, "the validation's closed-loop groups' errors (no 5 rows") {
		t.Errorf("closed-loop basis %q", b)
	}
}

// A family (or GPU) no row measured takes the pooled band widened by what leaving each
// measured family (GPU) out in turn needed: the 90th percentile of the left-out rows'
// distances from the others' pooled band's centre, in half-widths. Either alone widens.
func TestLeaveOutWidening(t *testing.T) {
	var rs []Residual
	add := func(fam, gpu string, xs ...float64) {
		for _, x := range xs {
			rs = append(rs, Residual{Group: Group{Family: fam, GPU: gpu, Engine: "vllm", Load: Closed}, Figure: "tpot_ms.p50", Predicted: 10, Actual: 10 * math.Exp(x)})
		}
	}
	add("a", "h100", 0.0, 0.1, -0.1, 0.05)
	add("b", "h100", 0.1, 0.2, 0.15, 0.05)
	add("c", "h200", -0.1, 0.0, -0.15, -0.05)
	add("d", "h200", 0.05, 0.1, 0.0, -0.05)
	add("e", "h200", 0.0, -0.1, 0.1, 0.05)
	add("f", "h200", 1.5, 1.4, 1.6, 1.3) // a family unlike the others
	// By hand: each family's rows against the pooled band of the other five.
	var zs []float64
	for _, out := range []string{"a", "b", "c", "d", "e", "f"} {
		var rest, held []Residual
		for _, r := range rs {
			if r.Group.Family == out {
				held = append(held, r)
			} else {
				rest = append(rest, r)
			}
		}
		p := NewTable(rest, "").Pooled["tpot_ms.p50"]
		c, h := (math.Log(p.Lo)+math.Log(p.Hi))/2, (math.Log(p.Hi)-math.Log(p.Lo))/2
		for _, r := range held {
			zs = append(zs, math.Abs(math.Log(r.Actual/r.Predicted)-c)/h)
		}
	}
	slices.Sort(zs)
	want := max(1, zs[int(math.Ceil(0.9*float64(len(zs))))-1]) // 22nd of 24: one of f's
	tab := NewTable(rs, "")
	if !near(tab.FamilyWidening, want) || !(tab.FamilyWidening > 1) {
		t.Fatalf("family widening %g, want %g (> 1: these families' biases differ)", tab.FamilyWidening, want)
	}
	pooled := tab.Pooled["tpot_ms.p50"]
	pw := math.Log(pooled.Hi / pooled.Lo)
	width := func(s Spread) float64 { b := s.ByLoad[Closed]["tpot_ms.p50"]; return math.Log(b.Hi / b.Lo) }
	if got := width(tab.For("new", "h100", "vllm")); !near(got, tab.FamilyWidening*pw) {
		t.Errorf("an unmeasured family on a measured GPU: log-width %g, want %g × %g", got, tab.FamilyWidening, pw)
	}
	if got := width(tab.For("a", "b200", "vllm")); !near(got, tab.GPUWidening*pw) {
		t.Errorf("a measured family on an unmeasured GPU: log-width %g, want %g × %g", got, tab.GPUWidening, pw)
	}
	if got := width(tab.For("new", "b200", "vllm")); !near(got, tab.FamilyWidening*tab.GPUWidening*pw) {
		t.Errorf("neither measured: log-width %g, want both widenings", got)
	}
	if one := NewTable(rs[:4], ""); one.FamilyWidening != 1 || one.GPUWidening != 1 {
		t.Errorf("one family and GPU: nothing to leave out, widenings %g and %g, want 1", one.FamilyWidening, one.GPUWidening)
	}
}

func TestApplyAndJSON(t *testing.T) {
	s := &Spread{Basis: map[string]string{Closed: "rows"}, ByLoad: map[string]map[string]Band{Closed: {
		"tpot_ms.p50": {Lo: 0.9, Hi: 1.2}, "output_throughput": {Lo: 0.8, Hi: 1.1}}}}
	lv := metrics.Level{OutputThroughput: 1000}
	lv.Metrics.Set(metrics.KeyTPOT, metrics.Stats{Count: 3, Percentiles: []metrics.Percentile{{P: 50, Value: 20}}})
	iv := s.Apply(&lv, Closed)
	if iv == nil {
		t.Fatal("no interval")
	}
	if r, ok := iv.Get("tpot_ms.p50"); !ok || !near(r[0], 18) || !near(r[1], 24) {
		t.Errorf("tpot_ms.p50 %v", r)
	}
	if r, ok := iv.Get("output_throughput"); !ok || !near(r[0], 800) || !near(r[1], 1100) {
		t.Errorf("output_throughput %v", r)
	}
	if s.Apply(&lv, Poisson) != nil {
		t.Error("an open loop with no bands got an interval")
	}
	b, err := json.Marshal(iv)
	if err != nil || !strings.Contains(string(b), `"tpot_ms":{"p50":[18,24]}`) || !strings.Contains(string(b), `"output_throughput":[800,1100]`) {
		t.Fatalf("json %s %v", b, err)
	}
	var back Interval
	if err := json.Unmarshal(b, &back); err != nil || back.Basis != "rows" {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if r, _ := back.Get("tpot_ms.p50"); r != [2]float64{18, 24} {
		t.Errorf("round trip tpot %v", r)
	}
}

// A calibrated profile's interval is its held-out error: measured within ±e of predicted.
func TestForProfileCalibrated(t *testing.T) {
	p, err := sim.LoadProfile("textbook")
	if err != nil {
		t.Fatal(err)
	}
	if ForProfile(p) != nil {
		t.Error("the linear textbook model got an interval")
	}
	p.Calibration = &sim.Calibration{Error: figure.Unmeasured()}
	p.Calibration.Error[figure.TPOTP50] = 20
	s := ForProfile(p)
	if s == nil {
		t.Fatal("no spread for a calibrated profile")
	}
	if b := s.ByLoad[Closed]["tpot_ms.p50"]; !near(b.Lo, 1/1.2) || !near(b.Hi, 1/0.8) {
		t.Errorf("band %+v", b)
	}
	r, err := sim.LoadProfile("h200-llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	if s := ForProfile(r); s == nil || len(s.ByLoad[Closed]) == 0 {
		t.Errorf("the roofline preset has no bands from the built-in table: %+v", s)
	}
}

// Coverage judges each held-out key's residuals by the others' table.
func TestCoverage(t *testing.T) {
	var rs []Residual
	for i := range 12 {
		g := Group{Family: "m", GPU: "h100", Engine: "vllm", Load: Closed}
		src := "a"
		if i%2 == 1 {
			src = "b"
		}
		rs = append(rs, Residual{Group: g, Source: src, Figure: "tpot_ms.p50", Predicted: 10, Actual: 10 * (1 + 0.01*float64(i%5))})
	}
	rs = append(rs, Residual{Group: Group{Family: "m", GPU: "h100", Engine: "vllm", Load: Closed}, Source: "c", Figure: "tpot_ms.p50", Predicted: 10, Actual: 100})
	held, total := Coverage(rs, func(r Residual) string { return r.Source })
	if total["c"] != 1 || held["c"] != 0 {
		t.Errorf("source c: %d of %d held, want 0 of 1 (a tenfold miss)", held["c"], total["c"])
	}
	if total["a"] != 6 || held["a"] == 0 {
		t.Errorf("source a: %d of %d held", held["a"], total["a"])
	}
}

func TestBuiltinTable(t *testing.T) {
	tab := Builtin()
	if len(tab.Pooled) == 0 || len(tab.Groups) == 0 || !strings.HasPrefix(tab.Made, "llmbench validate") {
		t.Fatalf("internal/predict/spreads.json: %d pooled, %d groups, made %q", len(tab.Pooled), len(tab.Groups), tab.Made)
	}
	for g, figs := range tab.Groups {
		for f, b := range figs {
			if !(b.Lo > 0 && b.Lo < b.Hi) || b.Rows < MinRows {
				t.Errorf("%s %s: band %+v", g, f, b)
			}
		}
	}
}

// The pooled band is a new group's: each group's mean error counts once, so a family
// measured in many rows does not narrow the band to its own bias; checked against the
// formula written out.
func TestNewGroupBand(t *testing.T) {
	var rs []Residual
	add := func(fam string, xs ...float64) {
		for _, x := range xs {
			rs = append(rs, Residual{Group: Group{Family: fam, GPU: "h100", Engine: "vllm", Load: Poisson}, Figure: "tpot_ms.p50", Predicted: 10, Actual: 10 * math.Exp(x)})
		}
	}
	many := make([]float64, 60)
	for i := range many {
		many[i] = 0.01 * float64(i%3-1) // -0.01, 0, 0.01
	}
	add("big", many...)
	add("b", 0.9, 1.1)
	add("c", -0.8)
	b := NewTable(rs, "").Pooled["tpot_ms.p50"]
	means := []float64{0, 1.0, -0.8}
	mu := (means[0] + means[1] + means[2]) / 3
	var between float64
	for _, m := range means {
		between += (m - mu) * (m - mu) / 2
	}
	var within float64
	for _, x := range many {
		within += x * x
	}
	within += 2 * 0.1 * 0.1
	// The big group's 59 degrees of freedom and b's one.
	within /= 59 + 1
	h := 2.9200 * math.Sqrt(between*(1+1.0/3)+within) // t(0.95, 2)
	if !near(b.Lo, math.Exp(mu-h)) || !near(b.Hi, math.Exp(mu+h)) || b.Rows != 63 || b.Groups != 3 {
		t.Errorf("band %+v, want [%g, %g] of 63 rows in 3 groups", b, math.Exp(mu-h), math.Exp(mu+h))
	}
	if !(b.Lo < math.Exp(-0.8) && b.Hi > math.Exp(1.1)) {
		t.Errorf("band %+v does not hold the other groups' errors", b)
	}
}

// A level takes the band of its own load kind: a closed loop, or its arrival process.
func TestLoadKinds(t *testing.T) {
	if LoadKind(true, schedule.Arrival{Kind: schedule.Constant}) != Closed || LoadKind(false, schedule.Arrival{}) != Poisson ||
		LoadKind(false, schedule.Arrival{Kind: schedule.Constant}) != Constant {
		t.Error("load kinds")
	}
	var rs []Residual
	for i := range MinRows {
		rs = append(rs, Residual{Group: Group{Family: "m", GPU: "h100", Engine: "vllm", Load: Constant}, Figure: "ttft_ms.p50", Predicted: 10, Actual: 11 + float64(i)})
	}
	n := Group{Family: "n", GPU: "h100", Engine: "vllm", Load: Poisson}
	rs = append(rs, Residual{Group: n, Figure: "ttft_ms.p50", Predicted: 10, Actual: 30},
		Residual{Group: n, Figure: "tpot_ms.p50", Predicted: 10, Actual: 12}, Residual{Group: n, Figure: "tpot_ms.p50", Predicted: 10, Actual: 14})
	tab := NewTable(rs, "")
	s := tab.For("m", "h100", "vllm")
	if s.ByLoad[Constant]["ttft_ms.p50"] != tab.Groups["m h100 vllm constant"]["ttft_ms.p50"] ||
		!strings.Contains(s.Basis[Constant], "the 5 validation rows of m h100 vllm constant (tpot_ms.p50, which they do not measure") {
		t.Errorf("constant arrivals: %+v, basis %q", s.ByLoad[Constant], s.Basis[Constant])
	}
	if s.ByLoad[Constant]["tpot_ms.p50"] != tab.Pooled["tpot_ms.p50"] {
		t.Errorf("a figure the group does not measure takes the pooled band: %+v", s.ByLoad[Constant])
	}
	if s.ByLoad[Gamma]["ttft_ms.p50"] != tab.Pooled["ttft_ms.p50"] {
		t.Errorf("gamma arrivals, no rows: %+v", s.ByLoad[Gamma])
	}
}
