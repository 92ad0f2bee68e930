package calibrate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/atomicfile"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/figure"
)

// ProbeConfig bounds the probe.
type ProbeConfig struct {
	// MaxConcurrency caps the requests in flight; 0 goes as high as seeing the batch limit
	// needs (twice the published slots, or until requests queue), at most DefaultMaxConcurrency.
	MaxConcurrency int
	// MaxInputTokens is the longest prompt sent; 0 is DefaultMaxInputTokens, or what the
	// server's context leaves when it publishes one.
	MaxInputTokens int
	Server         Published
	// Seed draws the open-loop step's arrivals.
	Seed int64
	// ServerTokens says the probe counts prompts in the server's own tokens (its
	// /tokenize); otherwise another tokenizer's count may fall short of the server's, and
	// prompts stay within tokenizerMargin of a slot's context.
	ServerTokens bool
}

// tokenizerMargin is the share of a slot's context a prompt counted with a tokenizer not
// the server's may take: tokenizers of one text differ by up to a third (o200k_base
// against a 32k-vocabulary model's), and a prompt one token over is refused.
const tokenizerMargin = 0.7

// Probe limits.
const (
	DefaultMaxConcurrency = 256
	DefaultMaxInputTokens = 4096
	prefillOutput         = 16 // tokens after each prefill probe's prompt: TPOT at concurrency 1 against context
	decodePrompt          = 32
	decodeOutput          = 64
	// A decode step's TPOT median is what every prediction above the probe extrapolates
	// from: each step runs at least decodeRequests requests, and more (up to
	// maxDecodeRequests) where they are quick, so that it lasts about decodeSeconds, and
	// the ladder runs twice (the second pass's steps named "-again"), so that a level
	// outlasts a machine's drift (32 requests of Ollama's 2 ms steps, a second or two, left
	// its c = 2 step 8–12 % off between calibrations minutes apart on two cores): a server
	// whose pace moved while one level was measured would skew the growth between levels,
	// which predictions above the probe multiply; two passes halve that, and their
	// difference at the lowest level is the pace drift the fit reports.
	decodeRequests    = 16 // a pass's; 32 over both
	maxDecodeRequests = 128
	decodeSeconds     = 2.0 // a pass's; 4 s over both
	mixedLong         = 8   // long prompts in the mixed phase: enough stalled steps for ITL's P99 to show
)

// Validate reports every problem at once, each a *fielderr.Error naming the field.
func (c ProbeConfig) Validate() error {
	var errs []error
	if c.MaxConcurrency < 0 {
		errs = append(errs, fielderr.New("MaxConcurrency", "%d must be positive (0: as high as the batch limit needs)", c.MaxConcurrency))
	}
	if c.MaxInputTokens < 0 || (c.MaxInputTokens > 0 && c.MaxInputTokens < 64) {
		errs = append(errs, fielderr.New("MaxInputTokens", "%d must be at least 64 (0: %d or what the server's context leaves)", c.MaxInputTokens, DefaultMaxInputTokens))
	}
	return errors.Join(errs...)
}

// Phase is the part of the probe a step belongs to.
type Phase string

const (
	PhasePrefill Phase = "prefill" // one request at a time over prompt lengths
	PhaseDecode  Phase = "decode"  // a ladder of concurrencies over short prompts
	PhaseMixed   Phase = "mixed"   // long prompts arriving while others decode
	PhaseOpen    Phase = "open"    // Poisson arrivals at half the capacity the ladder shows
)

// The open-loop step: prompts of openPrompt tokens (at most the longest probed) and
// outputs of openOutput, arriving as a Poisson process at openLoad of the capacity the
// decode ladder measured, for openSeconds (openRequests[0]..[1] requests): the regime
// of a user's open-loop run, whose error the closed loops do not state.
const (
	openPrompt  = 384
	openOutput  = 48
	openLoad    = 0.5
	openSeconds = 30.0
)

var openRequests = [2]int{40, 400}

// Step is one probe run: a closed loop of Concurrency over fixed lengths, or (Trace set)
// a replay of the mixed phase's arrivals. Name is its run folder's name after the step's
// number; Pass is 2 for the decode ladder's second pass (its names end in "-again"), else 1.
type Step struct {
	Name                      string
	Phase                     Phase
	Pass                      int
	Concurrency, Requests     int
	InputTokens, OutputTokens int
	Trace                     []TraceRow
	Rate                      float64 // the open-loop step's arrivals, req/s; 0 otherwise
}

// Limit is the server's limit the step may have run into, the other 0: the longest prompt
// it sends, for a prefill or mixed step, or its requests in flight, for a decode step; an
// open-loop step's neither.
func (s Step) Limit() (inputTokens, concurrency int) {
	switch s.Phase {
	case PhasePrefill, PhaseMixed:
		n := s.InputTokens
		for _, r := range s.Trace {
			n = max(n, r.Input)
		}
		return n, 0
	case PhaseDecode:
		return 0, s.Concurrency
	}
	return 0, 0
}

// TraceRow is one request of the mixed phase (a Mooncake trace row).
type TraceRow struct {
	At            time.Duration
	Input, Output int
}

// Prober designs the probe a step at a time: each step may depend on what the earlier
// ones measured (how high the decode ladder must go, when the mixed phase's long prompts
// should arrive).
type Prober struct {
	cfg      ProbeConfig
	maxConc  int
	maxIn    int
	prefills []int
	done     []Point
	stage    stage
	i        int
	nextC    int
	queued   bool
	ladder   []Step // the first pass's decode steps, run again in the second
}

// NewProber plans a probe within cfg.
func NewProber(cfg ProbeConfig) (*Prober, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Prober{cfg: cfg, nextC: 1}
	p.maxConc = cfg.MaxConcurrency
	if p.maxConc == 0 {
		p.maxConc = DefaultMaxConcurrency
		if s := cfg.Server.Slots; s > 0 {
			p.maxConc = min(p.maxConc, 2*s)
		}
	}
	p.maxIn = cfg.MaxInputTokens
	if p.maxIn == 0 {
		p.maxIn = DefaultMaxInputTokens
		if n := cfg.Server.seqTokens(); n > 0 {
			// A prompt and its output fit one slot's context (llama.cpp), with 64 tokens
			// spare for what the chat template adds to the prompt.
			room := n - prefillOutput - 64
			if !cfg.ServerTokens {
				room = int(float64(room) * tokenizerMargin)
			}
			p.maxIn = min(p.maxIn, room)
		}
	}
	if p.maxIn < 64 {
		return nil, fmt.Errorf("the server's context (%d tokens a slot) leaves no room for a 64-token prompt: start it with a larger context", cfg.Server.seqTokens())
	}
	p.prefills = prefillLengths(p.maxIn)
	return p, nil
}

// prefillLengths are the prefill phase's prompt lengths up to longest: short ones, where a
// prompt's fixed cost shows, then a quarter, a half, three quarters and all of longest,
// where attention's growth with the prompt shows (the longest is held out of the fit, so
// the points below it must show the curve it is predicted from).
func prefillLengths(longest int) []int {
	var out []int
	add := func(n int) {
		if n <= longest && (len(out) == 0 || float64(n) >= 1.3*float64(out[len(out)-1])) {
			out = append(out, n)
		}
	}
	for _, n := range []int{32, 128, 512} {
		add(n)
	}
	for _, q := range []int{1, 2, 3, 4} {
		add(longest * q / 4)
	}
	if out[len(out)-1] != longest {
		out[len(out)-1] = longest // the longest is probed, whatever fell short of the spacing
	}
	return out
}

// againSuffix ends the names of the decode ladder's second pass.
const againSuffix = "-again"

// stage is where the prober is in its plan.
type stage int

const (
	stagePrefill stage = iota
	stageDecode
	stageDecodeAgain
	stageOpen
	stageMixed
	stageDone
)

// Done records the point a step measured.
func (p *Prober) Done(pt Point) { p.done = append(p.done, pt) }

// Next is the next step; ok is false when the probe is complete.
func (p *Prober) Next() (Step, bool) {
	for {
		switch p.stage {
		case stagePrefill:
			if p.i < len(p.prefills) {
				n := p.prefills[p.i]
				p.i++
				return Step{Name: fmt.Sprintf("prefill-%d", n), Phase: PhasePrefill, Pass: 1, Concurrency: 1, Requests: 8, InputTokens: n, OutputTokens: prefillOutput}, true
			}
			p.stage = stageDecode
		case stageDecode:
			if last, ok := p.lastDecode(); ok && p.queueing(last) {
				p.queued = true
			}
			if p.nextC <= p.maxConc && !p.queued {
				c := p.nextC
				p.nextC *= 2
				if p.nextC > p.maxConc && c < p.maxConc {
					p.nextC = p.maxConc // the cap itself is probed
				}
				st := Step{Name: fmt.Sprintf("decode-c%d", c), Phase: PhaseDecode, Pass: 1, Concurrency: c, Requests: p.decodeRequests(c), InputTokens: decodePrompt, OutputTokens: decodeOutput}
				p.ladder = append(p.ladder, st)
				return st, true
			}
			p.stage, p.i = stageDecodeAgain, 0
		case stageDecodeAgain:
			if p.i < len(p.ladder) {
				st := p.ladder[p.i]
				p.i++
				st.Name += againSuffix
				st.Pass = 2
				return st, true
			}
			p.stage = stageOpen
		case stageOpen:
			p.stage = stageMixed
			if s, ok := p.open(); ok {
				return s, true
			}
		case stageMixed:
			p.stage = stageDone
			if s, ok := p.mixed(); ok {
				return s, true
			}
		default:
			return Step{}, false
		}
	}
}

// decodeRequests is how many requests the decode step at concurrency c runs: 4 per request
// in flight, at least decodeRequests, and as many as last about decodeSeconds at the pace
// last measured with short prompts (the last decode step's, else the shortest prefill
// step's: a request's TTFT and decodeOutput tokens at its TPOT), up to maxDecodeRequests.
func (p *Prober) decodeRequests(c int) int {
	n := max(4*c, decodeRequests)
	var pace *Point
	if d, ok := p.lastDecode(); ok {
		pace = d
	} else if len(p.done) > 0 {
		pace = &p.done[0]
	} else {
		return n
	}
	ms := pace.Measured[figure.TTFTP50] + decodeOutput*pace.Measured[figure.TPOTP50]
	if math.IsNaN(ms) || ms <= 0 {
		return n
	}
	want := int(math.Ceil(decodeSeconds * 1000 * float64(c) / ms))
	return max(n, min(want, max(4*c, maxDecodeRequests)))
}

func (p *Prober) lastDecode() (*Point, bool) {
	for i := len(p.done) - 1; i >= 0; i-- {
		if p.done[i].Phase == PhaseDecode {
			return &p.done[i], true
		}
	}
	return nil, false
}

// queueing says whether requests waited for a slot at the point: the server's gauges say
// fewer ran than were sent while one or more waited throughout (not a scrape that caught a
// request arriving mid-step), or TTFT grew by more than a quarter of a request's decoding
// over the level before.
func (p *Prober) queueing(pt *Point) bool {
	if r, w, ok := gauges(pt.Server); ok && w >= 1 && int(math.Round(r)) < pt.Concurrency {
		return true
	}
	var prev *Point
	for i := range p.done {
		if d := &p.done[i]; d.Phase == PhaseDecode && d.Concurrency < pt.Concurrency {
			prev = d
		}
	}
	if prev == nil {
		return false
	}
	return pt.Measured[figure.TTFTP50]-prev.Measured[figure.TTFTP50] > decodeOutput/4*prev.Measured[figure.TPOTP50]
}

// open designs the open-loop step from what was measured: the capacity is the most
// requests per second any decode level below the batch limit would finish of openPrompt →
// openOutput requests: its concurrency over a request's time (the prefill's TTFT at that
// prompt plus the outputs at the level's TPOT), and at most one over the engine's time per
// request (its prefill, which stalls the batch, and its share of the level's steps).
func (p *Prober) open() (Step, bool) {
	in := min(openPrompt, p.maxIn)
	ttft := nan
	for i := range p.done { // the prefill step nearest the open step's prompt
		d := &p.done[i]
		if d.Phase == PhasePrefill && (math.IsNaN(ttft) || meanPrompt(d) <= in) {
			ttft = d.Measured[figure.TTFTP50]
		}
	}
	capacity := 0.0
	for i := range p.done {
		d := &p.done[i]
		if d.Phase != PhaseDecode || math.IsNaN(d.Measured[figure.TPOTP50]) || math.IsNaN(ttft) || p.queueing(d) {
			continue // a level past the batch limit queues: its concurrency is not the engine's
		}
		if s := p.cfg.Server.Slots; s > 0 && d.Concurrency > s {
			continue
		}
		c, steps := float64(d.Concurrency), openOutput*d.Measured[figure.TPOTP50]
		capacity = math.Max(capacity, math.Min(c*1000/(ttft+steps), 1000/(ttft+steps/c)))
	}
	if capacity <= 0 || math.IsInf(capacity, 0) {
		return Step{}, false
	}
	rate := openLoad * capacity
	n := min(max(int(rate*openSeconds), openRequests[0]), openRequests[1])
	rng := rand.New(rand.NewPCG(uint64(p.cfg.Seed), 0x6f70656e)) // "open"
	s := Step{Name: fmt.Sprintf("open-r%.3g", rate), Phase: PhaseOpen, Pass: 1, Requests: n, InputTokens: in, OutputTokens: openOutput, Rate: rate}
	var at time.Duration
	for range n {
		s.Trace = append(s.Trace, TraceRow{At: at, Input: in, Output: openOutput})
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
	}
	return s, true
}

// mixed designs the mixed phase from what was measured: k short prompts decoding long
// outputs from t = 0 while mixedLong long prompts arrive one after another, spaced so
// that each prefill ends before the next arrives and all land while the k decode.
func (p *Prober) mixed() (Step, bool) {
	k := min(p.maxConc-1, 3)
	if s := p.cfg.Server.Slots; s > 1 {
		k = min(k, s-1)
	}
	if k < 1 {
		return Step{}, false
	}
	long := min(p.maxIn, 2048)
	tpot, ttft := nan, nan
	for i := range p.done {
		d := &p.done[i]
		if d.Phase == PhaseDecode && d.Concurrency <= k+1 {
			tpot = d.Measured[figure.TPOTP50]
		}
		if d.Phase == PhasePrefill && meanPrompt(d) <= long {
			ttft = d.Measured[figure.TTFTP50]
		}
	}
	if math.IsNaN(tpot) || math.IsNaN(ttft) || tpot <= 0 {
		return Step{}, false
	}
	out := int(math.Ceil(float64(mixedLong+1) * 1.5 * ttft / tpot))
	out = min(max(out, 256), 2048)
	spacing := time.Duration(float64(out) * tpot / float64(mixedLong+1) * float64(time.Millisecond))
	s := Step{Name: "mixed", Phase: PhaseMixed, Pass: 1}
	for range k {
		s.Trace = append(s.Trace, TraceRow{At: 0, Input: decodePrompt, Output: out})
	}
	for j := range mixedLong {
		// One output token: the point's TPOT is then the decoding requests' alone.
		s.Trace = append(s.Trace, TraceRow{At: spacing/2 + time.Duration(j)*spacing, Input: long, Output: 1})
	}
	s.Requests = len(s.Trace)
	return s, true
}

// stepOf is the probe step a run folder named name measured: its phase and pass ("", 0
// for a run that is not a probe's). The folder's name is all that says it on disk:
// a live calibration names them NN-phase-...[-again]; a level of a ladder is named
// folder/level.
func stepOf(name string) (Phase, int) {
	if i := strings.IndexByte(name, '-'); i > 0 && strings.Trim(name[:i], "0123456789") == "" {
		name = name[i+1:]
	}
	for _, ph := range []Phase{PhasePrefill, PhaseDecode, PhaseMixed, PhaseOpen} {
		if strings.HasPrefix(name, string(ph)) && !strings.Contains(name, "/") {
			if strings.HasSuffix(name, againSuffix) {
				return ph, 2
			}
			return ph, 1
		}
	}
	return "", 0
}

// StepTrace is the name of a probe step's trace, in its run folder.
const StepTrace = "trace.jsonl"

// WriteStepFiles writes, into step's run folder dir beside its run files, what the server
// published (so that a refit of the folders alone, calibrate FILE.probe/*, knows it too)
// and the mixed step's trace (inside the folder, so that FILE.probe/* names run folders
// only); it returns the trace's path, "" for a step without one.
func WriteStepFiles(dir string, pub Published, step Step) (string, error) {
	if pub.Slots > 0 {
		if err := atomicfile.Write(filepath.Join(dir, PublishedFile), pub.Write); err != nil {
			return "", err
		}
	}
	if step.Trace == nil {
		return "", nil
	}
	trace := filepath.Join(dir, StepTrace)
	return trace, atomicfile.Write(trace, func(w io.Writer) error { return WriteTrace(w, step.Trace) })
}

// RemoveStepFiles removes what WriteStepFiles wrote into dir, and dir when that leaves it
// empty: a failed step's folder, so that nothing blocks a calibration run again.
func RemoveStepFiles(dir string) {
	os.Remove(filepath.Join(dir, PublishedFile))
	os.Remove(filepath.Join(dir, StepTrace))
	os.Remove(dir) // os.Remove removes no folder that is not empty: what was measured stays
}

// WriteTrace writes rows as a Mooncake trace (JSON lines of timestamp in ms, input_length,
// output_length), the format run's mooncake dataset replays.
func WriteTrace(w io.Writer, rows []TraceRow) error {
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "{\"timestamp\": %.3f, \"input_length\": %d, \"output_length\": %d}\n",
			float64(r.At)/float64(time.Millisecond), r.Input, r.Output); err != nil {
			return err
		}
	}
	return nil
}
