package plan

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/predict"
	"github.com/llmbench/llmbench/internal/sim"
)

// Confidences: what a fleet is judged on.
const (
	// ConfidenceAuto ("" too) is ConfidenceInterval where every SLO term's interval, on
	// every engine configuration planned, reaches at most MaxEdgeFactor times the
	// simulated figure, and ConfidencePoint otherwise: a fleet sized against an edge
	// further out would be sized on the simulator's error (the validation rows' TTFT misses
	// are mostly fixed costs more replicas do not remove), not on the traffic.
	ConfidenceAuto = "auto"
	// ConfidenceInterval judges each SLO term at the unfavourable edge of its
	// figure's 90 % prediction interval (predict.ForProfile: how far the simulator was
	// measured from real GPUs for deployments like the candidate's, or a calibrated
	// profile's held-out error) as well as at the point: a fleet bought on it meets the
	// SLOs unless the server is further from its prediction than the measured ones were.
	ConfidenceInterval = "interval"
	// ConfidencePoint judges the simulator's point figures alone.
	ConfidencePoint = "point"
)

// edge is how one SLO term is judged for an engine configuration: its figure times Factor
// (the hi side of the band of Figure, the validation figure it was read from) within the
// bound. A term with no band (Factor 0) is judged at the point alone.
type edge struct {
	Factor float64
	Figure string // e.g. "ttft_ms.p99"
}

// edges are the SLO terms' edges (by the term as written) for profile p's predictions of
// an open-loop traffic of load kind load (Traffic.Load: its arrivals), and where the bands
// came from; none, and basis "", for a profile with no interval (a linear or table profile
// that no calibration measured).
func edges(p sim.Profile, slos []metrics.SLO, load string) (map[string]edge, string) {
	spread := predict.ForProfile(p)
	if spread == nil {
		return nil, ""
	}
	load = cmp.Or(load, predict.Poisson)
	bands := spread.ByLoad[load]
	out := map[string]edge{}
	for _, s := range slos {
		if s.Kind != metrics.SLOPercentile {
			continue
		}
		if f, ok := nearestBand(bands, s); ok {
			out[s.String()] = edge{Factor: bands[f].Hi, Figure: f}
		}
	}
	return out, spread.Basis[load]
}

// nearestBand is the band for term s: its metric's at its percentile, else at the nearest
// percentile there is a band for (a mean takes the median's); none for a metric the
// validation rows do not measure (ITL, a queue's wait).
func nearestBand(bands map[string]predict.Band, s metrics.SLO) (string, bool) {
	want := s.P
	if math.IsNaN(want) {
		want = 50
	}
	best, dist := "", math.Inf(1)
	for f := range bands {
		m, st, ok := strings.Cut(f, ".")
		if !ok || m != s.Metric+"_ms" {
			continue
		}
		p, err := strconv.ParseFloat(strings.TrimPrefix(st, "p"), 64)
		if err != nil {
			continue
		}
		if d := math.Abs(p - want); d < dist || d == dist && f < best {
			best, dist = f, d
		}
	}
	return best, best != ""
}

// MaxEdgeFactor is the widest interval edge, as a factor of the simulated figure, that
// ConfidenceAuto plans against.
const MaxEdgeFactor = 2.0

// resolveConfidence is what cfg's fleets are judged on, and why when it was chosen
// (ConfidenceAuto): the first term and engine configuration whose interval reaches past
// MaxEdgeFactor decide on the point.
func resolveConfidence(cfg Config, engines []engine) (string, string) {
	switch cfg.Confidence {
	case ConfidenceInterval, ConfidencePoint:
		return cfg.Confidence, ""
	}
	some := false
	for _, e := range engines {
		es, _ := edges(e.p, cfg.Metrics.SLOs, cfg.Traffic.Load)
		for _, s := range cfg.Metrics.SLOs {
			ed, ok := es[s.String()]
			if !ok {
				continue
			}
			some = true
			if ed.Factor > MaxEdgeFactor {
				return ConfidencePoint, fmt.Sprintf("%s's 90%% interval reaches ×%s the simulated figure on %s tp %d, past ×%g",
					s, fmtFactor(ed.Factor), e.p.GPU.Name, max(e.p.Deployment.TP, 1), MaxEdgeFactor)
			}
		}
	}
	if !some {
		return ConfidencePoint, "no SLO term has a prediction interval on the profiles planned"
	}
	return ConfidenceInterval, fmt.Sprintf("every SLO term's 90%% interval is within ×%g of the simulated figure", MaxEdgeFactor)
}

// judgedSLOs is slos as a fleet is judged on them: at ConfidenceInterval each term with an
// edge bounds its point figure by its bound over the edge's factor (never looser than the
// bound: the fleet must meet the SLOs at the point too). The terms keep their text, so
// verdicts name the terms as the user wrote them.
func judgedSLOs(slos []metrics.SLO, es map[string]edge, confidence string) []metrics.SLO {
	out := make([]metrics.SLO, len(slos))
	copy(out, slos)
	if confidence == ConfidencePoint {
		return out
	}
	for i, s := range out {
		if e, ok := es[s.String()]; ok && e.Factor > 1 {
			out[i].Limit = time.Duration(float64(s.Limit) / e.Factor)
		}
	}
	return out
}
