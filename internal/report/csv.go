package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/metrics"
)

// csvLead and csvTail are the registry's metrics in summary.csv (mean and every percentile
// each): the headline ones lead, as the file always had them; the client's read lag
// follows, then after the original columns every optional metric (the HTTP phases), empty
// where not measured. New metrics go at the end, so readers of older files keep working.
var csvLead, csvTail = func() (lead, tail []*metrics.Metric) {
	for _, m := range metrics.Registry {
		switch {
		case m.Headline:
			lead = append(lead, m)
		case m.Optional && !m.OnLevel:
			tail = append(tail, m)
		}
	}
	return lead, tail
}()

// WriteCSV writes summary.csv: one row per level with the headline figures. Columns for
// percentiles follow the summary's percentile list; empty cells mean "not measured".
func WriteCSV(w io.Writer, s *Summary) error {
	ps := s.Percentiles
	if len(ps) == 0 {
		ps = metrics.DefaultPercentiles
	}
	head := []string{"index", "name", "concurrency", "rate", "partial", "completed", "failed", "canceled",
		"duration_s", "request_throughput", "output_throughput", "total_token_throughput", "peak_output_throughput",
		"goodput", "goodput_token_throughput", "good_fraction", "total_input_tokens", "total_output_tokens",
		"peak_concurrency", "mean_concurrency"}
	columns := func(ms []*metrics.Metric) {
		for _, m := range ms {
			head = append(head, m.Key+"_mean_ms")
			for _, p := range ps {
				head = append(head, m.Key+"_"+metrics.Key(p)+"_ms")
			}
		}
	}
	readLag, _ := metrics.Lookup(metrics.KeyReadLag)
	columns(csvLead)
	// The client's read lag (levels[i].read_lag_ms): empty unless the kernel stamped events.
	columns([]*metrics.Metric{readLag})
	head = append(head, "slo_pass", "errors", "sweet_spot", "slo_limit")
	columns(csvTail)
	head = append(head, "retried", "ttft_upper_bound", "error_statuses", "input_throughput", "inputs_per_s", "documents_per_s",
		"end_reason", "steady_state", "runs",
		"cost_usd_per_hour", "cost_gpus", "cost_per_million_output_tokens", "cost_per_million_tokens", "cost_per_1k_requests",
		"cost_per_million_good_output_tokens")
	// An agentic level's tasks (levels[i].tasks): empty for other levels.
	head = append(head, "tasks_completed", "tasks_failed", "tasks_per_s", "cost_per_task", "calls_per_task_mean", "good_tasks")
	for _, m := range metrics.TaskRegistry {
		head = append(head, m.Key+"_mean_ms")
		for _, p := range ps {
			head = append(head, m.Key+"_"+metrics.Key(p)+"_ms")
		}
	}
	// What the server said of its prompt cache (levels[i].cached_tokens, prefix_cache_hits):
	// empty where it said nothing.
	head = append(head, "cached_tokens_requests", "cached_tokens_mean", "cached_tokens_hit_rate", "prefix_cache_hits")
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	for i, l := range s.Levels {
		row := []string{strconv.Itoa(i), l.Name, csvInt(l.Concurrency), csvFloat(l.Rate), strconv.FormatBool(l.Partial),
			strconv.Itoa(l.Completed), strconv.Itoa(l.Failed), strconv.Itoa(l.Canceled),
			csvNum(l.DurationS), csvNum(l.RequestThroughput), csvNum(l.OutputThroughput), csvNum(l.TotalTokenThroughput), csvNum(l.PeakOutputThroughput),
			csvNumPtr(l.Goodput), csvNumPtr(l.GoodputTokenThroughput), csvNumPtr(l.GoodFraction),
			strconv.Itoa(l.TotalInputTokens), strconv.Itoa(l.TotalOutputTokens),
			strconv.Itoa(l.PeakConcurrency), csvNum(l.MeanConcurrency)}
		stats := func(st *metrics.Stats) {
			if st == nil || st.Count == 0 {
				for range len(ps) + 1 {
					row = append(row, "")
				}
				return
			}
			row = append(row, csvNum(st.Mean))
			for _, p := range ps {
				pc, ok := st.Get(p)
				row = append(row, csvNumOK(pc.Value, ok))
			}
		}
		for _, m := range csvLead {
			st, _ := l.Metrics.Get(m.Key)
			stats(st)
		}
		stats(l.ReadLag)
		verdict := ""
		if l.SLO != nil {
			verdict = strconv.FormatBool(l.SLO.Pass)
		}
		row = append(row, verdict, csvErrors(l.Errors),
			strconv.FormatBool(s.SweetSpot != nil && s.SweetSpot.Index == i),
			strconv.FormatBool(s.SLOLimit != nil && s.SLOLimit.Index == i))
		for _, m := range csvTail {
			st, _ := l.Metrics.Get(m.Key)
			stats(st)
		}
		row = append(row, strconv.Itoa(l.Retried), strconv.Itoa(l.TTFTUpperBound), csvErrorDetails(l.ErrorDetails),
			csvNum(l.InputThroughput), csvNumPtr(l.InputsPerS), csvNumPtr(l.DocumentsPerS))
		steady := ""
		if l.SteadyState != nil {
			steady = strconv.FormatBool(l.SteadyState.Reached)
		}
		row = append(row, l.EndReason, steady, csvInt(len(l.Runs)))
		if c := l.Cost; c != nil {
			row = append(row, csvNum(c.USDPerHour), csvInt(c.GPUs), csvNumPtr(c.PerMillionOutputTokens), csvNumPtr(c.PerMillionTokens),
				csvNumPtr(c.Per1kRequests), csvNumPtr(c.PerMillionGoodOutputTokens))
		} else {
			row = append(row, "", "", "", "", "", "") // not priced
		}
		if t := l.Tasks; t != nil {
			good := ""
			if t.Good != nil {
				good = strconv.Itoa(*t.Good)
			}
			calls := ""
			if t.CallsPerTask.Count > 0 {
				calls = csvNum(t.CallsPerTask.Mean)
			}
			row = append(row, strconv.Itoa(t.Completed), strconv.Itoa(t.Failed), csvNum(t.TasksPerS), csvNumPtr(t.CostPerTask), calls, good)
			for _, st := range []metrics.Stats{t.Task, t.Tool, t.Model} { // TaskRegistry's order
				stats(&st)
			}
		} else {
			for range 6 + len(metrics.TaskRegistry)*(len(ps)+1) {
				row = append(row, "")
			}
		}
		if ct := l.CachedTokens; ct != nil {
			row = append(row, strconv.Itoa(ct.Requests), csvNum(ct.Mean), csvNum(ct.HitRate))
		} else {
			row = append(row, "", "", "")
		}
		row = append(row, csvIntPtr(l.PrefixCacheHits))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("summary.csv: %w", err)
	}
	return nil
}

// errorsCell is "kind=count;kind=count" in kind order.
func csvErrors(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + "=" + strconv.Itoa(m[k])
	}
	return strings.Join(parts, ";")
}

// csvErrorDetails is "kind status=count;..." most common first (kind alone without a status).
func csvErrorDetails(ds []metrics.ErrorDetail) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Kind
		if d.Status != 0 {
			parts[i] += " " + strconv.Itoa(d.Status)
		}
		parts[i] += "=" + strconv.Itoa(d.Count)
	}
	return strings.Join(parts, ";")
}

func csvNum(v float64) string { return csvNumOK(v, true) }

func csvNumOK(v float64, ok bool) string {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func csvNumPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return csvNum(*v)
}

func csvInt(v int) string {
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

func csvFloat(v float64) string {
	if v == 0 {
		return ""
	}
	return csvNum(v)
}

func csvIntPtr(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}
