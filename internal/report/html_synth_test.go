package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/record"
)

// synthRun builds a small but realistic closed-loop ladder: a server whose prefill queues and
// whose decode slows as concurrency grows, a few multi-token chunks, warm-up requests and, at
// the heaviest level, some failures. It returns summary.json's bytes (figures computed from
// the records with the docs/design.md definitions) and the records, so tests need no other package.
func synthRun(concurrencies []int, perLevel int, seed uint64) ([]byte, []record.Record) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var recs []record.Record
	levelStart := time.Duration(0)
	var levels []map[string]any
	for li, c := range concurrencies {
		slots := make([]time.Duration, c)
		for i := range slots {
			slots[i] = levelStart
		}
		warm := 2
		var lvRecs []record.Record
		levelEnd := levelStart
		for i := 0; i < perLevel+warm; i++ {
			s := slices.Index(slots, slices.Min(slots))
			sched := slots[s]
			sent := sched + time.Duration(50+rng.IntN(300))*time.Microsecond
			r := record.Record{Level: li, Index: i, Warmup: i < warm, Scheduled: sched, Sent: sent, InputTokens: 200 + rng.IntN(100), ResponseID: "cmpl-" + strconv.Itoa(li) + "-" + strconv.Itoa(i)}
			ttft := time.Duration(float64(35*time.Millisecond)*(1+float64(c)/12)*(0.8+0.4*rng.Float64())) + time.Duration(rng.ExpFloat64()*float64(3*time.Millisecond)*float64(c)/8)
			tpot := time.Duration(float64(8*time.Millisecond) * (1 + float64(c)/20) * (0.9 + 0.2*rng.Float64()))
			if c >= 64 && rng.IntN(25) == 0 {
				r.Done = sent + ttft/2
				r.Error = &record.Error{Kind: record.KindHTTPStatus, Status: 503, Message: `{"error":"overloaded"}`}
			} else {
				n := 80 + rng.IntN(40)
				r.Events.Base = sent
				t := sent + ttft
				got := 0
				for got < n {
					k := 1
					if rng.IntN(10) == 0 && n-got >= 2 {
						k = 2
					}
					r.Events.Append(t, k)
					got += k
					t += time.Duration(float64(tpot) * float64(k) * (0.7 + 0.6*rng.Float64()))
				}
				last, _ := r.LastToken()
				r.Done = last + 200*time.Microsecond
				r.OutputTokens, r.OutputTokensSource = n, record.SourceUsage
			}
			// HTTP phases as a client measures them: write and headers on every request,
			// DNS, connect and TLS on each slot's first (a new connection); none at the
			// heaviest level, as from a client that measures none.
			if c < 64 {
				r.Phases = &record.Phases{Write: 50 * time.Microsecond, Headers: ttft / 4, Has: record.PhaseWrite | record.PhaseHeaders}
				if i < c {
					r.Phases.DNS, r.Phases.Connect, r.Phases.TLS = 300*time.Microsecond, time.Millisecond, 4*time.Millisecond
					r.Phases.Has |= record.PhaseDNS | record.PhaseConnect | record.PhaseTLS
				}
			}
			slots[s] = r.Done
			levelEnd = max(levelEnd, r.Done)
			lvRecs = append(lvRecs, r)
		}
		recs = append(recs, lvRecs...)
		levels = append(levels, synthLevel(lvRecs, c))
		levelStart = levelEnd + 500*time.Millisecond
	}
	sum := map[string]any{
		"schema":           "llmbench/summary/v1",
		"llmbench_version": "v0.0.0-test",
		"started_at":       "2025-01-02T03:04:05Z",
		"run_start_unix":   1735787045.25,
		"seed":             42,
		"end_reason":       "completed",
		"target":           map[string]any{"url": "http://127.0.0.1:8000", "api": "openai-chat", "model": "textbook-sim"},
		"workload":         map[string]any{"dataset": "random", "input_tokens": "uniform:200:299", "output_tokens": "uniform:80:119"},
		"load":             map[string]any{"mode": "concurrency", "concurrency": concurrencies, "requests": perLevel, "warmup": 2},
		"levels":           levels,
		"sweet_spot":       map[string]any{"index": min(2, len(levels)-1), "concurrency": concurrencies[min(2, len(levels)-1)], "reason": "knee of output throughput vs concurrency (Kneedle)"},
		"slo_limit":        map[string]any{"index": min(1, len(levels)-1), "concurrency": concurrencies[min(1, len(levels)-1)], "reason": "highest level meeting tpot:p99<=15ms"},
	}
	b, _ := json.MarshalIndent(sum, "", "  ")
	return b, recs
}

// synthLevel computes a level's summary figures the way docs/design.md §2 defines them.
func synthLevel(recs []record.Record, c int) map[string]any {
	var ttft, tpot, itl, e2el, lag []float64
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	completed, failed, outTok := 0, 0, 0
	errs := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		first, last = min(first, r.Sent), max(last, r.Done)
		lag = append(lag, ms(r.Sent-r.Scheduled))
		if r.Error != nil {
			failed++
			errs[r.Error.Kind]++
			continue
		}
		completed++
		outTok += r.OutputTokens
		f, _ := r.FirstToken()
		l, _ := r.LastToken()
		ttft = append(ttft, ms(f-r.Sent))
		e2el = append(e2el, ms(l-r.Sent))
		tpot = append(tpot, ms(l-f)/float64(r.OutputTokens-1))
		prev := f
		r.Events.Each(func(i int, t time.Duration, n int) {
			if i > 0 {
				for range n {
					itl = append(itl, ms(t-prev)/float64(n))
				}
			}
			prev = t
		})
	}
	dur := (last - first).Seconds()
	stats := func(v []float64) map[string]any {
		s := slices.Clone(v)
		slices.Sort(s)
		m := map[string]any{"count": len(s)}
		var sum float64
		for _, x := range s {
			sum += x
		}
		m["mean"], m["min"], m["max"] = sum/float64(len(s)), s[0], s[len(s)-1]
		ci := map[string]any{}
		for _, p := range []float64{50, 90, 95, 99, 99.9} {
			k := "p" + strconv.FormatFloat(p, 'f', -1, 64)
			m[k] = exactQuantile(s, p/100)
			if p >= 99 && len(s) < 400 {
				ci[k] = []any{m[k], nil} // too few samples to bound the upper side
			} else {
				ci[k] = []any{exactQuantile(s, p/100*0.98), exactQuantile(s, min(1, p/100*1.01))}
			}
		}
		m["ci95"] = ci
		return m
	}
	tpotStats := stats(tpot)
	p99, _ := tpotStats["p99"].(float64)
	return map[string]any{
		"name": "concurrency " + strconv.Itoa(c), "concurrency": c,
		"completed": completed, "failed": failed, "errors": errs, "duration_s": dur,
		"request_throughput": float64(completed) / dur, "output_throughput": float64(outTok) / dur,
		"metrics": map[string]any{"ttft_ms": stats(ttft), "tpot_ms": tpotStats, "itl_ms": stats(itl), "e2el_ms": stats(e2el), "schedule_lag_ms": stats(lag)},
		"slo":     map[string]any{"pass": p99 <= 15, "terms": []any{map[string]any{"term": "tpot:p99<=15ms", "value": p99, "pass": p99 <= 15}}},
	}
}

// exactQuantile is numpy's default percentile on sorted s (linear interpolation).
func exactQuantile(s []float64, f float64) float64 {
	h := f * float64(len(s)-1)
	k := int(math.Floor(h))
	if k+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[k] + (h-float64(k))*(s[k+1]-s[k])
}

func writeRecords(t testing.TB, path string, recs []record.Record) {
	t.Helper()
	var b bytes.Buffer
	for i := range recs {
		b.Write(record.AppendJSON(nil, &recs[i]))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeSynthRun writes summary.json and records.jsonl into dir and returns their paths.
func writeSynthRun(t testing.TB, dir string, concurrencies []int, perLevel int) (summary []byte, recordsPath string) {
	t.Helper()
	sum, recs := synthRun(concurrencies, perLevel, 7)
	recordsPath = filepath.Join(dir, "records.jsonl")
	writeRecords(t, recordsPath, recs)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return sum, recordsPath
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
