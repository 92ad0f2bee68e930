// Package calibrate fits a simulator profile to a real server: from the records of runs
// made against it (a designed probe, or ladders already run), it finds the cost model,
// batch limit, chunked-prefill budget, prefill placement, network round trip and step-time
// noise under which the simulator reproduces what was measured, and states how well the
// fit predicts probe points it was not fitted on.
//
// The simulator itself is the model being fitted: every candidate profile is judged by
// replaying each probe point's requests through load.RunVirtual and aggregating the
// records with internal/metrics, exactly as simulate would. Nothing here re-derives a
// metric.
package calibrate

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"time"

	"github.com/llmbench/llmbench/internal/figure"
	"github.com/llmbench/llmbench/internal/gpumetrics"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
	"github.com/llmbench/llmbench/internal/servermetrics"
)

// Request is one measured request as the engine saw it.
type Request struct {
	Prompt, Output int           // tokens: the server's prompt count when it gave one, and output
	Intended       int           // the prompt's tokens as the client counted them
	Arrival        time.Duration // scheduled offset from the level's first request (open loop)
	Warmup         bool
}

// Point is one probe point: a level of a run folder, its requests and what was measured.
type Point struct {
	Name string // the run folder's base name, and the level's when it has several
	// Phase and Pass are the probe step the point measured ("", 0: not a probe's).
	Phase       Phase
	Pass        int
	Dir         string
	Level       int
	Concurrency int  // closed loop
	Open        bool // open loop or trace: Arrival times replayed as measured
	Requests    []Request
	Completed   int           // requests that completed with a first token
	Measured    figure.Values // ms
	// SE is the relative standard error of each measured figure (TTFT and TPOT P50, ITL
	// P99 used): how much a figure would move between two runs of the point, so that the
	// fit trusts a TPOT averaged over hundreds of tokens more than a TTFT median of six
	// requests.
	SE     figure.Values
	Server *servermetrics.Summary // the server's /metrics during the level; nil if not scraped
	GPU    *gpumetrics.Summary    // the GPUs' telemetry during the level (when sampled); nil if none
	// ServerOverhead is the median of TTFT minus the server's own queue and prefill times
	// (llama.cpp timings, Ollama durations): the network and front end; NaN without them.
	ServerOverhead float64
	// SendSpread is, in a closed loop of several, the time in ms between the first and the
	// last of the requests sent together at the level's start; NaN otherwise.
	SendSpread float64
	// Noise is the coefficient of variation of the level's steps, from the spread of each
	// request's inter-token gaps about its own median; NaN when it has too few.
	Noise float64
	// Paces are the completed requests' median inter-token gaps (ms), in the records'
	// order: the server's pace request by request (TwoSpeeds reads them).
	Paces []float64
}

// Source is what a set of run folders says about the server they measured.
type Source struct {
	URL, API, Model string
	Dirs            []string
	// Published is what the server published of its limits, as a probe of it wrote down
	// beside its run folders (PublishedFile); zero when none did.
	Published Published
	// ClosesConnections says a run found the server closing every connection after its
	// response (summary.json's target).
	ClosesConnections bool
}

// Load reads the probe points of run folders: every level of each, with its records.
// A folder that is not a run, a level with failed requests or one with no completed
// request is an error naming it: a fit to a server that erred would fit the errors.
func Load(dirs []string) ([]Point, Source, error) {
	var set Points
	var errs []error
	for _, dir := range dirs {
		if _, err := set.Add(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, set.src, errors.Join(errs...)
	}
	return set.All()
}

// Points gathers probe points a run folder at a time (a probe's steps as each ends), all
// of one server.
type Points struct {
	pts []Point
	src Source
}

// Add reads dir's points (as Load does) and returns them; a folder that measured another
// server than the earlier ones is an error, and adds nothing.
func (set *Points) Add(dir string) ([]Point, error) {
	p, s, err := loadDir(dir)
	if err != nil {
		return nil, err
	}
	src := &set.src
	if src.URL == "" {
		src.URL, src.API, src.Model = s.URL, s.API, s.Model
	} else if s.URL != src.URL || s.Model != src.Model {
		return nil, fmt.Errorf("%s: measured %s (model %q), not %s (model %q) as %s: fit one server at a time", dir, s.URL, s.Model, src.URL, src.Model, src.Dirs[0])
	}
	pub, err := readPublished(dir)
	if err != nil {
		return nil, err
	}
	if pub.Slots > 0 {
		src.Published = pub
	}
	src.Dirs = append(src.Dirs, dir)
	src.ClosesConnections = src.ClosesConnections || s.ClosesConnections
	set.pts = append(set.pts, p...)
	return p, nil
}

// Source is what the folders added so far say of the server.
func (set *Points) Source() Source { return set.src }

// All is every point added and what their folders say of the server; none is an error.
func (set *Points) All() ([]Point, Source, error) {
	if len(set.pts) == 0 {
		return nil, set.src, ErrNoPoints
	}
	return set.pts, set.src, nil
}

// ErrNoPoints is a calibration given no probe point: no run folder, or a probe that
// measured nothing.
var ErrNoPoints = errors.New("no probe points")

// SimulatedRunError is a run folder of a simulation, not of a live server: calibrate fits
// what a server measured.
type SimulatedRunError struct{ Dir string }

func (e *SimulatedRunError) Error() string {
	return e.Dir + ": a simulate run, not one against a server: calibrate fits live runs"
}

func loadDir(dir string) ([]Point, report.Target, error) {
	sum, err := report.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, report.Target{}, fmt.Errorf("%s: not a run folder (%w)", dir, err)
	} else if err != nil {
		return nil, report.Target{}, err
	}
	if sum.Target.URL == "" {
		return nil, sum.Target, &SimulatedRunError{Dir: dir}
	}
	path, err := record.Find(dir)
	if err != nil {
		return nil, sum.Target, err
	}
	byLevel := map[int][]record.Record{}
	err = record.EachInFile(path, func(r *record.Record) error {
		byLevel[r.Level] = append(byLevel[r.Level], *r)
		return nil
	})
	if err != nil {
		return nil, sum.Target, err
	}
	var pts []Point
	var errs []error
	for i, l := range sum.Levels {
		recs := byLevel[i]
		name := filepath.Base(filepath.Clean(dir))
		if len(sum.Levels) > 1 {
			name += "/" + l.Name
		}
		pt, err := newPoint(name, dir, i, l, recs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		pts = append(pts, pt)
	}
	return pts, sum.Target, errors.Join(errs...)
}

func newPoint(name, dir string, idx int, l report.Level, recs []record.Record) (Point, error) {
	pt := Point{Name: name, Dir: dir, Level: idx, Concurrency: l.Concurrency, Open: l.Concurrency == 0, Server: l.Server, GPU: l.GPU}
	pt.Phase, pt.Pass = stepOf(name)
	failed := 0
	var first *record.Record
	for i := range recs {
		if r := &recs[i]; r.Error != nil && r.Error.Kind != record.KindCanceled {
			failed++
			if first == nil {
				first = r
			}
		}
	}
	if failed > 0 {
		return pt, fmt.Errorf("%d of %d requests failed (%s: %s): a fit needs a server that answers every probe request; fix the server or lower the load", failed, len(recs), first.Error.Kind, first.Error.Message)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Index < recs[j].Index })
	var t0 time.Duration = -1
	for i := range recs {
		if t0 < 0 || recs[i].Scheduled < t0 {
			t0 = recs[i].Scheduled
		}
	}
	for i := range recs {
		r := &recs[i]
		if r.Error != nil { // cut off by the run's end: not sent to the engine in full
			continue
		}
		p := r.InputTokens
		if r.ServerPromptTokens > 0 {
			p = r.ServerPromptTokens
		}
		pt.Requests = append(pt.Requests, Request{Prompt: p, Intended: r.InputTokens, Output: r.OutputTokens, Arrival: r.Scheduled - t0, Warmup: r.Warmup})
	}
	d := newDists()
	for i := range recs {
		d.add(&recs[i])
	}
	pt.Completed, pt.Measured = d.completed(), d.figures()
	pt.SE = d.relativeErrors()
	if pt.Completed == 0 {
		return pt, errors.New("no request completed")
	}
	if math.IsNaN(pt.Measured[figure.TTFTP50]) {
		return pt, errors.New("no TTFT measured (an unstreamed run?): calibrate needs streamed generation requests")
	}
	pt.ServerOverhead = serverOverhead(recs)
	pt.SendSpread = nan
	if pt.Concurrency > 1 && len(recs) >= pt.Concurrency {
		lo, hi := recs[0].Sent, recs[0].Sent
		for _, r := range recs[:pt.Concurrency] { // the first slot-fulls, by index
			lo, hi = min(lo, r.Sent), max(hi, r.Sent)
		}
		pt.SendSpread = float64(hi-lo) / float64(time.Millisecond)
	}
	pt.Noise, pt.Paces = stepNoise(recs)
	return pt, nil
}

// serverOverhead is the median over requests of TTFT minus the server's queue and prefill
// times: what the network and the server's front end add before the engine's first token.
func serverOverhead(recs []record.Record) float64 {
	var xs []float64
	for i := range recs {
		r := &recs[i]
		ft, ok := r.FirstToken()
		if r.Error != nil || r.Warmup || !ok || r.Server == nil || r.Server.Prefill <= 0 {
			continue
		}
		xs = append(xs, float64(ft-r.Sent-r.Server.Prefill-r.Server.Queue)/float64(time.Millisecond))
	}
	if len(xs) < 3 {
		return nan
	}
	return metrics.Median(xs)
}
