package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/rundesc"
)

// Caveat is one thing a reader must know before trusting a run's figures: what the console
// says beside them, said in report.html too. Level is the level it is about, -1 the run.
type Caveat struct {
	Level int
	Kind  string // steady_state, stopped, partial, client_behind, prefix_cache, failures, verdict, low_n, sweet_spot
	Text  string
}

// Caveats lists the run's caveats, level by level, then the run's own: the one derivation
// of what the console says of steady states, stops, the client's lateness, flattering
// prefix-cache hits, failures, SLO verdicts that fail or are undecided, percentiles on too
// few samples and a missing sweet spot, which report.html shows beside the figures.
func Caveats(s *Summary) []Caveat {
	var out []Caveat
	add := func(i int, kind, text string) { out = append(out, Caveat{Level: i, Kind: kind, Text: text}) }
	lowN := false
	for i, l := range s.Levels {
		if l.Partial {
			add(i, "partial", "partial: the run ended during this level")
		}
		switch l.EndReason {
		case EndOversaturated:
			add(i, "stopped", "Level stopped: oversaturated: the server could not keep up with this rate (its backlog kept growing)")
		case EndMaxErrorRate:
			add(i, "stopped", "Level stopped: max_error_rate: too many of its last requests failed (--max-error-rate)")
		case EndUnreachable:
			add(i, "stopped", "Level stopped: unreachable: its first requests all failed to connect: is the server up at --url?")
		}
		if ss := l.SteadyState; ss != nil && !ss.Reached {
			text := "Steady state: NOT REACHED: " + ss.Reason
			if ss.Advice != "" {
				text += "; " + ss.Advice
			}
			add(i, "steady_state", text)
		}
		if why := ClientBehind(l.Level); why != "" {
			add(i, "client_behind", ClientBehindText(why))
		}
		if h := l.PrefixCacheHits; h != nil && *h > 0 && PrefixHitsFlatter(s.Workload) {
			add(i, "prefix_cache", PrefixHitsText(*h))
		}
		if l.Failed > 0 {
			add(i, "failures", fmt.Sprintf("FAILURES: %d of %d requests (%.1f%%) failed", l.Failed, l.Completed+l.Failed,
				100*float64(l.Failed)/float64(l.Completed+l.Failed)))
		}
		if v := l.SLO; v != nil && !v.Pass {
			text := "SLO verdict: " + verdictWord(v)
			add(i, "verdict", text)
		}
		lowN = lowN || hasLowN(l.Level)
	}
	if lowN {
		add(-1, "low_n", "Percentiles marked ~ (low n): too few samples to bound their 95% confidence interval (indicative only)")
	}
	if len(s.Levels) > 1 && s.SweetSpot == nil {
		add(-1, "sweet_spot", "Sweet spot: "+NoSweetSpotReason(s))
	}
	return out
}

// ClientBehindText is the caveat of a level whose client fell behind (ClientBehind's why).
func ClientBehindText(why string) string {
	return fmt.Sprintf("Client behind (the client, not the server, was late): %s; %s", why, ClientBehindAdvice)
}

// PrefixHitsFlatter says whether prefix-cache hits flatter a run's TTFT: it asked for no
// shared prefix and is no conversation or agentic task, whose history is what hits are for.
func PrefixHitsFlatter(w rundesc.Workload) bool {
	return w.PrefixTokens == 0 && w.Turns <= 1 && w.Agentic == nil
}

// PrefixHitsText is the caveat of a level whose prompts the server's cache served.
func PrefixHitsText(n int) string {
	return fmt.Sprintf("Prefix cache hits: %d measured requests had more than 10%% of their prompt served from the server's prompt cache, though the run asked for no shared prefix: their TTFT is flattered (prompts repeated from an earlier run with the same --seed, or a dataset's repeated rows)", n)
}

// NoSweetSpotReason says why a ladder has no sweet spot: no level met the SLOs, or the
// throughput had no knee — with the load that gave the most where that was the lowest (a
// server saturated from the first level).
func NoSweetSpotReason(s *Summary) string {
	if passed, judged := s.SLOPassed(); judged && !passed {
		return "none: no level meets the SLOs"
	}
	if len(s.Levels) == 1 && len(s.Levels[0].Stages) > 0 {
		return "none: a staged level has no one load to pick; read its stages (By Stage, levels[].stages[])"
	}
	lv := make([]metrics.Level, len(s.Levels))
	for i := range s.Levels {
		lv[i] = s.Levels[i].Level
	}
	fig := metrics.LadderThroughput(lv)
	best, lowest := -1, -1
	for i := range s.Levels {
		if best < 0 || fig.Of(&lv[i]) > fig.Of(&lv[best]) {
			best = i
		}
		if x := s.Levels[i].Load(); lowest < 0 || loadX(x) < loadX(s.Levels[lowest].Load()) {
			lowest = i
		}
	}
	if best >= 0 && best == lowest {
		return fmt.Sprintf("none (no knee in %s across the levels): the lowest load, level %d, gave the most; more load bought none, so the server was saturated from the first level", fig.Name, best)
	}
	return "none (no knee in " + fig.Name + " across the levels)"
}

func loadX(l metrics.Load) float64 {
	if l.Concurrency > 0 {
		return float64(l.Concurrency)
	}
	return l.Rate
}

// hasLowN says whether any percentile the level reports is on too few samples to bound.
func hasLowN(l metrics.Level) bool {
	low := false
	for _, m := range metrics.Registry {
		st, ok := l.Metrics.Get(m.Key)
		if !ok || st.Count == 0 {
			continue
		}
		for _, p := range st.Percentiles {
			low = low || !p.Reliable()
		}
	}
	return low
}

// caveatLine is a caveat as a line of a list: its level's name first where it has one.
func caveatLine(s *Summary, c Caveat) string {
	if c.Level < 0 || c.Level >= len(s.Levels) {
		return c.Text
	}
	name := s.Levels[c.Level].Name
	if name == "" {
		name = "level " + strconv.Itoa(c.Level)
	}
	return name + ": " + strings.TrimSpace(c.Text)
}
