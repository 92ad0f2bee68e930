package calibrate

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/bench"
	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/schedule"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// TokenizerAuto sizes the probe's prompts in the server's own tokens where it answers
// /tokenize, else with o200k_base.
const TokenizerAuto = "auto"

// ProbeRun is a probe of a server: how to reach it, the probe's bounds, and where each
// step's run folder goes.
type ProbeRun struct {
	URL, API, Model string
	APIKey          string // as resolved: sent as a bearer token
	Headers         http.Header
	Tokenizer       string // TokenizerAuto, "server", or a tokenizer run loads
	// MaxConcurrency and MaxInputTokens bound the steps (ProbeConfig's).
	MaxConcurrency, MaxInputTokens int
	Seed                           int64  // step n's prompts are seeded Seed+n; 0 draws one
	Dir                            string // each step a run folder under it
	Overwrite                      bool   // an earlier probe in Dir goes, as a whole
	// Run runs one step's Spec as run runs a benchmark (bench.RunLive).
	Run   func(ctx context.Context, spec *bench.Spec) error
	Notes ProbeNotes

	// chatTemplate is the one beside Tokenizer's tokenizer.json, which the chat APIs'
	// prompts are sized with (bench.ChatTemplateBeside), as run finds it.
	chatTemplate *chattemplate.Template
}

// ProbeNotes are told what the probe is doing; each nil says nothing.
type ProbeNotes struct {
	Checking  func(pub Published)                // its slots may share one KV cache: checking whether they do
	Limits    func(pub Published)                // what the server has, where it publishes its limits
	Tokenizer func(tok string, slotContext bool) // what TokenizerAuto chose
	Start     func(dir string)                   // the steps begin, each a run folder under dir
	Step      func(n int, step Step, pt Point)   // step n (1-based) measured pt
}

// ProbeCause is why a probe stopped before its last step, for the caller's exit code.
type ProbeCause int

const (
	ProbeSettings    ProbeCause = iota + 1 // the settings cannot be probed with (fielderr.Error keys ProbeConfig's fields)
	ProbeFailed                            // the server or the disk failed
	ProbeInterrupted                       // the context ended
	ProbeUnmeasured                        // a step ran and measured no level
)

// ProbeError is a probe stopped by Cause.
type ProbeError struct {
	Cause ProbeCause
	Err   error
}

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// StepError is a step whose run failed (Err, the runner's), so the server cannot be fitted;
// Tokenizer is the one its prompts were sized with.
type StepError struct {
	Step      Step
	Tokenizer string
	Err       error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("probe step %s failed, so the server cannot be fitted: %v", e.Step.Name, e.Err)
}
func (e *StepError) Unwrap() error { return e.Err }

func probeErr(cause ProbeCause, err error) error { return &ProbeError{Cause: cause, Err: err} }

// Probe runs the designed probe against r.URL, each step a run folder under r.Dir run by
// r.Run, and returns the points the steps measured and what the server published of its
// limits.
func Probe(ctx context.Context, r ProbeRun) (*Points, Published, error) {
	side, err := client.SideClient(client.Config{BaseURL: r.URL, API: r.API, APIKey: r.APIKey, Headers: r.Headers, Timeout: 10 * time.Second})
	if err != nil {
		return nil, Published{}, probeErr(ProbeSettings, err)
	}
	defer side.CloseIdleConnections()
	if r.Seed == 0 {
		// A server's prompt cache (llama.cpp's, vLLM's prefix cache) answers a prompt it has
		// seen without prefilling it: every probe must send prompts new to it.
		r.Seed = time.Now().UnixNano() & (1<<40 - 1)
	}
	if r.Tokenizer != TokenizerAuto { // what auto chooses, the server's tokens or an encoding, has none
		if r.chatTemplate, err = bench.ChatTemplateBeside(r.Tokenizer, r.API); err != nil {
			return nil, Published{}, probeErr(ProbeSettings, &fielderr.Error{Field: "Tokenizer", Err: fmt.Errorf("%s: %w", r.Tokenizer, err)})
		}
	}
	pub, err := r.readLimits(ctx, side)
	if err != nil {
		return nil, pub, err
	}
	if r.Tokenizer, err = r.chooseTokenizer(ctx, side, pub.SeqTokens > 0); err != nil {
		return nil, pub, err
	}
	pr, err := NewProber(ProbeConfig{MaxConcurrency: r.MaxConcurrency, MaxInputTokens: r.MaxInputTokens, Server: pub, ServerTokens: r.Tokenizer == "server", Seed: r.Seed})
	if err != nil {
		return nil, pub, probeErr(ProbeSettings, err)
	}
	if r.Overwrite {
		// The earlier probe goes as a whole: steps it ran that this one does not, and what
		// that server published, would otherwise be fitted with this one's.
		if err := os.RemoveAll(r.Dir); err != nil {
			return nil, pub, probeErr(ProbeFailed, err)
		}
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, pub, probeErr(ProbeFailed, err)
	}
	if r.Notes.Start != nil {
		r.Notes.Start(r.Dir)
	}
	var set Points
	keepAlive := true // false once a step found the server closing every connection
	for n := 1; ; n++ {
		step, ok := pr.Next()
		if !ok {
			break
		}
		pt, err := r.step(ctx, &set, pub, step, n, keepAlive)
		if err != nil {
			return nil, pub, err
		}
		keepAlive = !set.Source().ClosesConnections
		pr.Done(pt)
	}
	return &set, pub, nil
}

// readLimits reads what the server publishes of its limits (llama.cpp's /props) and, where
// its slots may share one KV cache, checks whether they do.
func (r *ProbeRun) readLimits(ctx context.Context, side *http.Client) (Published, error) {
	pub, err := ReadProps(ctx, side, r.URL)
	if err != nil {
		return pub, probeErr(ProbeFailed, err)
	}
	if pub.Slots == 0 {
		return pub, nil // nothing published (vLLM, Ollama)
	}
	if pub.Slots > 1 {
		// A prefill of 1.2 contexts: far longer than a side call's 10 s on a slow server.
		long, err := client.SideClient(client.Config{BaseURL: r.URL, API: r.API, APIKey: r.APIKey, Timeout: 10 * time.Minute})
		if err != nil {
			return pub, probeErr(ProbeSettings, err)
		}
		if r.Notes.Checking != nil {
			r.Notes.Checking(pub)
		}
		pub, err = CheckUnified(ctx, long, r.URL, pub, r.Seed)
		long.CloseIdleConnections()
		if err != nil {
			return pub, probeErr(ProbeFailed, err)
		}
	}
	if r.Notes.Limits != nil {
		r.Notes.Limits(pub)
	}
	return pub, nil
}

// chooseTokenizer resolves TokenizerAuto: "server" when the server answers /tokenize (its
// own tokens: a prompt sized to a slot's context fits it), else o200k_base.
func (r *ProbeRun) chooseTokenizer(ctx context.Context, side *http.Client, slotContext bool) (string, error) {
	if r.Tokenizer != TokenizerAuto {
		return r.Tokenizer, nil
	}
	tok := bench.DefaultTokenizer
	if _, err := tokenizer.NewServer(r.URL, side).(*tokenizer.Server).Tokenize(ctx, "Hello"); err == nil {
		tok = "server"
	} else if ctx.Err() != nil {
		return "", probeErr(ProbeInterrupted, ctx.Err())
	}
	if r.Notes.Tokenizer != nil {
		r.Notes.Tokenizer(tok, slotContext)
	}
	return tok, nil
}

// step runs probe step n (1-based) into its run folder under r.Dir, adds what it measured
// to set and returns its point.
func (r *ProbeRun) step(ctx context.Context, set *Points, pub Published, step Step, n int, keepAlive bool) (Point, error) {
	out := filepath.Join(r.Dir, fmt.Sprintf("%02d-%s", n, step.Name))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Point{}, probeErr(ProbeFailed, err)
	}
	trace, err := WriteStepFiles(out, pub, step)
	if err != nil {
		return Point{}, probeErr(ProbeFailed, err)
	}
	if err := r.Run(ctx, r.StepSpec(step, n, out, trace, keepAlive)); err != nil {
		// Folders the step left empty go: what was measured stays, and nothing blocks a
		// calibration run again.
		RemoveStepFiles(out)
		os.Remove(r.Dir)
		if ctx.Err() != nil {
			return Point{}, probeErr(ProbeInterrupted, fmt.Errorf("interrupted at probe step %s; the steps done are in %s", step.Name, r.Dir))
		}
		return Point{}, &StepError{Step: step, Tokenizer: r.Tokenizer, Err: err}
	}
	pts, err := set.Add(out)
	if err == nil && len(pts) == 0 {
		err = fmt.Errorf("%s measured no level", out)
	}
	if err != nil {
		return Point{}, probeErr(ProbeUnmeasured, fmt.Errorf("probe step %s: %w", step.Name, err))
	}
	if r.Notes.Step != nil {
		r.Notes.Step(n, step, pts[0])
	}
	return pts[0], nil
}

// StepSpec is probe step n (1-based) as a run into folder out, r's Seed and Tokenizer as
// Probe resolved them: run's defaults (bench.DefaultSpec) where the probe sets nothing. A
// closed loop of the step's concurrency over fixed lengths, or (a trace) its arrivals
// replayed; two percentiles; the server's /metrics scraped often enough to see a step's
// batch, and no GPU's; the first step's test request warming the server and checking that
// it answers, and the model it found in the server's list trusted by the later ones.
func (r *ProbeRun) StepSpec(step Step, n int, out, trace string, keepAlive bool) *bench.Spec {
	s := bench.DefaultSpec()
	seed := r.Seed + int64(n)
	s.API, s.Tokenizer, s.Seed, s.Workload.Seed, s.Requests = r.API, r.Tokenizer, seed, seed, step.Requests
	s.URL, s.Model, s.ModelChecked, s.APIKey, s.Headers = strings.TrimRight(r.URL, "/"), r.Model, n > 1, r.APIKey, r.Headers.Clone()
	s.KeepAlive, s.TestRequest = keepAlive, n == 1
	s.ChatTemplate, s.ChatOnServer = r.chatTemplate, r.Tokenizer == "server" && client.AppliesChatTemplate(r.API)
	s.Judge.Metrics.Percentiles = []float64{50, 99}
	s.Telemetry.Interval, s.Telemetry.NoGPU = 100*time.Millisecond, true
	s.Output.Dir, s.Output.Overwrite = out, r.Overwrite
	if trace != "" { // a trace's rows
		s.Workload.Dataset = "mooncake:" + trace
		s.SetLadder(nil, []float64{1}, schedule.Stages{})
	} else {
		s.Workload.InputTokens, s.Workload.OutputTokens = workload.Fixed(step.InputTokens), workload.Fixed(step.OutputTokens)
		s.SetLadder([]float64{float64(step.Concurrency)}, nil, schedule.Stages{})
	}
	return &s
}
