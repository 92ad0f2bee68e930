package metrics

import (
	"math"
	"math/bits"

	"github.com/llmbench/llmbench/internal/record"
)

// ServerTimings sets a server's own per-request timings (llama.cpp's "timings", Ollama's
// prompt_eval_duration / eval_duration / eval_count) beside the client's figures for the
// same requests. The gap, client − server, is the part of TTFT or TPOT the server's clock
// does not see: its HTTP front end and queues it does not time, the network, and the client.
type ServerTimings struct {
	Requests int `json:"requests"` // completed measured requests that carry server timings

	// TTFT compares the client's TTFT with the server's queue + prefill time, over the
	// requests that reported a prefill or queue time; null when none did.
	TTFT *ServerGap `json:"ttft"`
	// TPOT compares the client's TPOT, (last − first) / (N − 1), with the server's decode
	// time / (its output tokens − 1), the N − 1 steps after the first token: exactly what
	// llama.cpp's predicted_ms spans. Ollama's eval_duration also holds the first token's
	// sampling (docs/metrics.md), so its figure reads high by up to one step / (N − 1).
	// Over requests with N >= 2 on both sides and a decode time; null when none qualify.
	TPOT *ServerGap `json:"tpot"`
	// Total compares the client's whole request time, done − sent, with the server's own
	// total handling time (Ollama's total_duration, from its HTTP handler's start to its last
	// reply): the gap is what lies outside the server's HTTP handler — network and client.
	// Null when no request reported a total.
	Total *ServerGap `json:"total"`
	// ServerPerTokenMean is the figure the servers print themselves, decode time / output
	// tokens (Ollama's eval_duration / eval_count, llama.cpp's predicted_per_token_ms),
	// averaged over TPOT's requests: (N − 1) / N of the comparable server TPOT. Null with TPOT.
	ServerPerTokenMean *float64 `json:"server_per_token_mean_ms"`
	// OutputTokensDiffer counts requests whose server-timed output tokens differ from the
	// client's N (a server that timed tokens the client never saw, or the reverse).
	OutputTokensDiffer int `json:"output_tokens_differ"`
}

// ServerGap is one client-vs-server comparison over the same requests, in ms.
type ServerGap struct {
	Requests   int     `json:"requests"`
	ClientMean float64 `json:"client_mean_ms"`
	ClientP50  float64 `json:"client_p50_ms"`
	ServerMean float64 `json:"server_mean_ms"`
	ServerP50  float64 `json:"server_p50_ms"`
	// Gap statistics are of the per-request difference client − server, so the median gap
	// is not the difference of the medians.
	GapMean float64 `json:"gap_mean_ms"`
	GapP50  float64 `json:"gap_p50_ms"`
	GapP99  float64 `json:"gap_p99_ms"`
	// GapShare is GapMean / ClientMean: the fraction of the client's figure spent outside
	// the server's timed work. Null when the client mean is 0.
	GapShare *float64 `json:"gap_share"`
	// Unreliable lists the keys above (e.g. "gap_p99_ms") whose 95% confidence interval the
	// sample is too small to bound, as Stats does for percentiles.
	Unreliable []string `json:"unreliable"`
}

// countsForLatency reports whether a record counts towards the latency metrics (as in Aggregate).
func countsForLatency(r *record.Record) bool { return !r.Warmup && r.Error == nil }

// outputTokensOf is the request's N as Aggregate counts it.
func outputTokensOf(r *record.Record) int {
	if r.OutputTokens > 0 {
		return r.OutputTokens
	}
	return r.Events.Tokens()
}

// compareServerTimings builds levels[i].server_timings from records; nil when no completed
// measured record carries server timings.
func compareServerTimings(recs []record.Record) *ServerTimings {
	var acc serverTimingsAcc
	for i := range recs {
		if countsForLatency(&recs[i]) {
			acc.add(&recs[i])
		}
	}
	return acc.result()
}

// serverTimingsAcc accumulates levels[i].server_timings over completed measured records.
// The client's side of each comparison is the registry's own TTFT and TPOT of the request.
type serverTimingsAcc struct {
	st                                 ServerTimings
	tc, ts, tg                         *Dist // TTFT client, server, gap
	pc, ps, pg                         *Dist // TPOT client, server, gap
	ec, es, eg                         *Dist // total client, server, gap
	perTok                             kahan
	hasTTFT, hasTPOT, hasTotal, hasAny bool
}

func (a *serverTimingsAcc) add(r *record.Record) {
	sv := r.Server
	if sv == nil {
		return
	}
	if !a.hasAny {
		a.hasAny = true
		a.tc, a.ts, a.tg = NewDist(), NewDist(), NewDist()
		a.pc, a.ps, a.pg = NewDist(), NewDist(), NewDist()
		a.ec, a.es, a.eg = NewDist(), NewDist(), NewDist()
	}
	a.st.Requests++
	n := outputTokensOf(r)
	if sv.OutputTokens > 0 && sv.OutputTokens != n {
		a.st.OutputTokensDiffer++
	}
	s := us(r.Sent)
	if sv.Total > 0 {
		a.hasTotal = true
		d, srv := max(us(r.Done), s), us(sv.Total)
		a.ec.AddMicros(d - s)
		a.es.AddMicros(srv)
		a.eg.AddMicros(d - s - srv)
	}
	// Zero fields were not reported (record.ServerTimings), so a server that gives no
	// prefill time is left out rather than counted as an instant prefill.
	if sv.Prefill > 0 || sv.Queue > 0 {
		srv := us(sv.Queue + sv.Prefill)
		registryIndex[KeyTTFT].Samples(r, func(num, den int64, w uint64) {
			a.hasTTFT = true
			a.tc.AddRatio(num, den, w)
			a.ts.AddMicros(srv)
			a.tg.AddRatio(num-srv*den, den, w)
		})
	}
	if sv.OutputTokens >= 2 && sv.Decode > 0 {
		d, sn := us(sv.Decode), int64(sv.OutputTokens-1)
		registryIndex[KeyTPOT].Samples(r, func(num, den int64, w uint64) {
			a.hasTPOT = true
			a.pc.AddRatio(num, den, w)
			a.ps.AddRatio(d, sn, 1)
			addDiff(a.pg, num, den, d, sn)
			a.perTok.add(float64(d) / float64(sv.OutputTokens) / 1000)
		})
	}
}

func (a *serverTimingsAcc) result() *ServerTimings {
	if !a.hasAny {
		return nil
	}
	st := a.st
	if a.hasTTFT {
		st.TTFT = gapOf(a.tc, a.ts, a.tg)
	}
	if a.hasTPOT {
		st.TPOT = gapOf(a.pc, a.ps, a.pg)
		st.ServerPerTokenMean = ptr(a.perTok.sum() / float64(a.pc.Count()))
	}
	if a.hasTotal {
		st.Total = gapOf(a.ec, a.es, a.eg)
	}
	return &st
}

// addDiff adds the exact sample a/b − c/d µs (b, d > 0), falling back to whole
// microseconds only where the exact fraction would overflow int64.
func addDiff(dist *Dist, a, b, c, d int64) {
	num1, ok1 := mul64(a, d)
	num2, ok2 := mul64(c, b)
	den, ok3 := mul64(b, d)
	if ok1 && ok2 && ok3 {
		num := num1 - num2
		if (num2 >= 0 && num <= num1) || (num2 < 0 && num > num1) { // no overflow in the subtraction
			dist.AddRatio(num, den, 1)
			return
		}
	}
	dist.AddMicros(int64(math.Round(float64(a)/float64(b) - float64(c)/float64(d))))
}

// mul64 is x*y with an overflow report.
func mul64(x, y int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(abs64(x)), uint64(abs64(y)))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	p := int64(lo)
	if (x < 0) != (y < 0) {
		p = -p
	}
	return p, true
}

func gapOf(client, server, gap *Dist) *ServerGap {
	g := &ServerGap{Requests: int(gap.Count()), Unreliable: []string{}}
	pct := func(d *Dist, p float64, key string) float64 {
		v, _ := d.Percentile(p)
		if lo, hi := d.CI95(p); math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			g.Unreliable = append(g.Unreliable, key)
		}
		return v
	}
	g.ClientMean, _ = client.MeanStd()
	g.ServerMean, _ = server.MeanStd()
	g.GapMean, _ = gap.MeanStd()
	g.ClientP50 = pct(client, 50, "client_p50_ms")
	g.ServerP50 = pct(server, 50, "server_p50_ms")
	g.GapP50 = pct(gap, 50, "gap_p50_ms")
	g.GapP99 = pct(gap, 99, "gap_p99_ms")
	if g.ClientMean != 0 {
		g.GapShare = ptr(g.GapMean / g.ClientMean)
	}
	return g
}

// firstContentStats is levels[i].first_content_ms of records (the registry's first_content).
func firstContentStats(recs []record.Record, percentiles []float64) *Stats {
	a := NewAggregator(Config{Percentiles: percentiles})
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Level().FirstContent
}
