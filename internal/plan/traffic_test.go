package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/sim"
)

// rateSpec is a simulation's spec at the rates given (none: no rate), of the default
// workload.
func rateSpec(rates ...float64) *bench.Spec {
	s := bench.DefaultSpec()
	s.Live, s.Workload.LengthsOnly = false, true
	s.SetLoads(nil, rates, schedule.Stages{}, false)
	return &s
}

// TestSpecTraffic: one rate given is the traffic, at that rate scaled, over the horizon
// asked unless the length was given; no rate, several, or a rate beside a trace are
// refused with the errors the caller words.
func TestSpecTraffic(t *testing.T) {
	tr, _, err := SpecTraffic(rateSpec(4), Given{Rate: true})
	if err != nil || tr.Rate != 4 || tr.Fixed || tr.Trace || tr.Unit != "" {
		t.Fatalf("rate 4: %+v, %v", tr, err)
	}
	l, _, err := tr.At(2, time.Minute)
	if err != nil || l.Rate != 8 || l.Duration != time.Minute || l.Requests != 0 {
		t.Errorf("at twice the rate over a minute: %+v, %v", l, err)
	}
	if tr.Load != predict.Poisson {
		t.Errorf("load kind %q, want %q", tr.Load, predict.Poisson)
	}
	steady := rateSpec()
	steady.Base.Arrival = schedule.Arrival{Kind: schedule.Constant}
	steady.SetLoads(nil, []float64{4}, schedule.Stages{}, false)
	if tr, _, _ := SpecTraffic(steady, Given{Rate: true}); tr.Load != predict.Constant {
		t.Errorf("constant arrivals: load kind %q, want %q (the bands its fleets are judged at)", tr.Load, predict.Constant)
	}
	if tr, _, _ := SpecTraffic(rateSpec(4), Given{Rate: true, Length: true}); !tr.Fixed {
		t.Error("a length given: want the traffic's length fixed")
	}
	for _, c := range []struct {
		spec  *bench.Spec
		given Given
		want  error
	}{{rateSpec(), Given{}, ErrOneRate}, {rateSpec(4, 8), Given{Rate: true}, ErrOneRate}, {rateSpec(4), Given{}, ErrOneRate}} {
		if _, _, err := SpecTraffic(c.spec, c.given); !errors.Is(err, c.want) {
			t.Errorf("%v, %+v: %v, want %v", c.spec.Levels, c.given, err, c.want)
		}
	}
	trace := rateSpec(4)
	trace.Workload.Dataset = "mooncake:../cli/testdata/golden/trace.jsonl"
	if _, _, err := SpecTraffic(trace, Given{Rate: true}); !errors.Is(err, ErrTraceRate) {
		t.Errorf("a rate beside a trace: %v, want ErrTraceRate", err)
	}
	trace = rateSpec()
	trace.Workload.Dataset = "mooncake:../cli/testdata/golden/trace.jsonl"
	if tr, fit, err := SpecTraffic(trace, Given{}); err != nil || !tr.Trace || !tr.Fixed || !fit.Replayed {
		t.Errorf("a trace: %+v, %+v, %v: want its own arrivals, replayed", tr, fit, err)
	}
	bad := rateSpec(4)
	bad.Tokenizer = "no-such-tokenizer"
	var field *fielderr.Error
	if _, _, err := SpecTraffic(bad, Given{Rate: true}); !errors.As(err, &field) || field.Field != "Tokenizer" {
		t.Errorf("an unknown tokenizer: %v, want the Tokenizer field's", err)
	}
}

// TestForSpec: the base is seeded by the spec, and the metrics are the spec's.
func TestForSpec(t *testing.T) {
	spec := rateSpec(4)
	spec.Seed = 7
	spec.Judge.Metrics = slos(t, "ttft:p99<=1s")
	var c Config
	if _, err := c.ForSpec(spec, textbook(t), Given{Rate: true}); err != nil {
		t.Fatal(err)
	}
	if c.Base.Seed != 7 || len(c.Metrics.SLOs) != 1 || c.Price == nil || c.Traffic.Rate != 4 {
		t.Errorf("%+v", c)
	}
}

// TestSpaceTextParse: each list is read into its field, and each problem is its field's,
// all at once.
func TestSpaceTextParse(t *testing.T) {
	s, err := SpaceText{GPUs: "h100, h200", TPs: "1,2", ExpertParallel: "false,true", Speculative: "off,4:0.8"}.Parse()
	if err != nil || len(s.GPUs) != 2 || len(s.TPs) != 2 || s.TPs[1] != 2 || !s.ExpertParallel[1] || len(s.Speculative) != 2 {
		t.Fatalf("%+v, %v", s, err)
	}
	_, err = SpaceText{GPUs: ",", TPs: "1.5", DPs: "x", ExpertParallel: "maybe", Speculative: "4:x"}.Parse()
	if got, want := strings.Join(fielderr.Fields(err), " "), "Space.Speculative Space.GPUs Space.TPs Space.DPs Space.ExpertParallel"; got != want {
		t.Errorf("fields %q, want %q (%v)", got, want, err)
	}
}

// TestModelBase: a preset on the default profile, a profile serving a config (named after
// it on the default profile), and each problem its field's.
func TestModelBase(t *testing.T) {
	p, err := Model{Shape: "llama-3.1-8b"}.Base()
	if err != nil || p.Name != "llama-3.1-8b" || p.Cost.Kind != sim.CostRoofline {
		t.Errorf("preset: %s %s, %v", p.Name, p.Cost.Kind, err)
	}
	cfg := "../sim/testdata/hf-configs/llama-3.1-8b/config.json"
	if p, err := (Model{Profile: sim.DefaultProfile, Config: cfg}).Base(); err != nil || p.Name != cfg {
		t.Errorf("a config on the default profile: %s, %v", p.Name, err)
	}
	for m, want := range map[Model]string{{Shape: "nosuch"}: "Model.Shape", {Profile: "nosuch.yaml"}: "Model.Profile",
		{Profile: "textbook", Config: cfg, ProfileGiven: true}: "Model.Config"} {
		var f *fielderr.Error
		if _, err := m.Base(); !errors.As(err, &f) || f.Field != want {
			t.Errorf("%+v: %v, want the %s field's", m, err, want)
		}
	}
}
