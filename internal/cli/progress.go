package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/plan"
	"github.com/llmbench/llmbench/internal/record"
)

// progress shows a level's progress on stderr when stderr is a terminal (otherwise nothing,
// so logs and CI output stay clean): the level, requests done and failed, the rate, the
// time left (by count or by the level's duration), and, once a level runs for more than a
// few seconds, a live line of its recent TTFT and TPOT P50/P99 and output tokens/s. It is
// redrawn four times a second from the first moment. A simulated level's time is the
// virtual clock's, read from its records (a 600 s level may take a second of wall time).
type progress struct {
	w       io.Writer
	name    string
	total   int           // requests to send; 0 when the level is timed
	d       time.Duration // the level's duration; 0 when counted
	start   time.Time
	virtual bool

	mu                 sync.Mutex
	done, failed, toks int
	ttft, tpot         window        // recent values, ms
	vFirst, vLast      time.Duration // virtual: the first record's send and the latest finish
	stop               chan struct{}
	stopped            chan struct{}
}

// window keeps the most recent values of a metric, for a live estimate.
type window struct {
	vals []float64
	next int
}

const windowSize = 512

func (w *window) add(v float64) {
	if len(w.vals) < windowSize {
		w.vals = append(w.vals, v)
		return
	}
	w.vals[w.next] = v
	w.next = (w.next + 1) % windowSize
}

// p50p99 are the window's percentiles (nearest rank: it is a live hint, not a figure).
func (w *window) p50p99() (p50, p99 float64, ok bool) {
	if len(w.vals) == 0 {
		return 0, 0, false
	}
	s := slices.Clone(w.vals)
	slices.Sort(s)
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), true
}

func newProgress(w io.Writer, name string, total int, d time.Duration, virtual, disabled bool) *progress {
	if disabled || !terminal(w) {
		return &progress{}
	}
	p := &progress{w: w, name: name, total: total, d: d, start: time.Now(), virtual: virtual,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.stopped)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	p.draw()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.draw()
		}
	}
}

// Add counts a finished request, and its TTFT and TPOT by the registry's derivations.
func (p *progress) Add(r *record.Record) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Done > 0 { // a request never sent has no times
		if p.vLast == 0 || r.Sent < p.vFirst {
			p.vFirst = r.Sent
		}
		p.vLast = max(p.vLast, r.Done)
	}
	p.done++
	if r.Error != nil && r.Error.Kind != record.KindCanceled {
		p.failed++
		return
	}
	p.toks += r.OutputTokens
	for _, c := range []struct {
		key string
		w   *window
	}{{metrics.KeyTTFT, &p.ttft}, {metrics.KeyTPOT, &p.tpot}} {
		m, _ := metrics.Lookup(c.key)
		m.Samples(r, func(num, den int64, _ uint64) { c.w.add(float64(num) / float64(den) / 1000) })
	}
}

func (p *progress) draw() {
	p.mu.Lock()
	name, elapsed := p.name, time.Since(p.start)
	if p.virtual {
		name, elapsed = "simulated "+name, max(p.vLast-p.vFirst, 0)
	}
	line := progressLine(name, p.total, p.d, elapsed, p.done, p.failed, p.toks, &p.ttft, &p.tpot)
	p.mu.Unlock()
	redraw(p.w, line)
}

// redraw replaces the terminal's current line with line, cut to the terminal's width.
func redraw(w io.Writer, line string) {
	width := 100
	if f, ok := terminalFile(w); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			width = cols
		}
	}
	if len(line) >= width {
		line = line[:width-1]
	}
	fmt.Fprintf(w, "\r\033[K%s", line)
}

// terminal reports whether w is a terminal (where a progress line belongs).
func terminal(w io.Writer) bool {
	_, ok := terminalFile(w)
	return ok
}

// terminalFile is the terminal w writes to, through any writers wrapping it (each with an
// Unwrap method, as foldNotes has); false when w does not end at a terminal.
func terminalFile(w io.Writer) (*os.File, bool) {
	for {
		switch v := w.(type) {
		case *os.File:
			return v, term.IsTerminal(int(v.Fd()))
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return nil, false
		}
	}
}

// liveLine redraws the line a function gives four times a second on a terminal (nothing
// elsewhere), like a level's progress bar, for commands that are not levels (plan).
type liveLine struct {
	w             io.Writer
	line          func() string
	mu            sync.Mutex // a redraw, or a line said while the bar is up
	stop, stopped chan struct{}
}

func newLiveLine(w io.Writer, disabled bool, line func() string) *liveLine {
	if disabled || !terminal(w) {
		return &liveLine{}
	}
	l := &liveLine{w: w, line: line, stop: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(l.stopped)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			l.mu.Lock()
			redraw(l.w, l.line())
			l.mu.Unlock()
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
		}
	}()
	return l
}

// say prints a whole line to out (the same terminal, or not) with the bar cleared first, so
// that the line does not land behind the bar's text; the next redraw puts the bar back.
func (l *liveLine) say(out io.Writer, line string) {
	if l.w != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprint(l.w, "\r\033[K")
	}
	fmt.Fprintln(out, line)
}

// finish clears the line.
func (l *liveLine) finish() {
	if l.w == nil {
		return
	}
	close(l.stop)
	<-l.stopped
	fmt.Fprint(l.w, "\r\033[K")
}

// progressLine is what the bar says: pure, for tests.
func progressLine(name string, total int, d, elapsed time.Duration, done, failed, toks int, ttft, tpot *window) string {
	var b strings.Builder
	b.WriteString(name + " ")
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	switch {
	case total > 0:
		fmt.Fprintf(&b, "%d/%d", done, total)
	default:
		fmt.Fprintf(&b, "%d done", done)
	}
	if failed > 0 {
		fmt.Fprintf(&b, ", %d failed (%.1f%%)", failed, 100*float64(failed)/float64(done))
	}
	fmt.Fprintf(&b, ", %.1f req/s", rate)
	switch {
	case d > 0:
		fmt.Fprintf(&b, ", %s left", max(d-elapsed, 0).Round(time.Second))
	case total > 0 && rate > 0 && elapsed >= time.Second:
		left := time.Duration(float64(total-done) / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ~%s left", left.Round(time.Second))
	}
	if elapsed >= 3*time.Second { // a long level: how it is going
		if p50, p99, ok := ttft.p50p99(); ok {
			fmt.Fprintf(&b, " | TTFT P50/P99 %.0f/%.0f ms", p50, p99)
		}
		if p50, p99, ok := tpot.p50p99(); ok {
			fmt.Fprintf(&b, ", TPOT %.1f/%.1f", p50, p99)
		}
		fmt.Fprintf(&b, ", %.0f tok/s", float64(toks)/elapsed.Seconds())
	}
	return b.String()
}

// Finish clears the progress line.
func (p *progress) Finish() {
	if p.w == nil {
		return
	}
	close(p.stop)
	<-p.stopped
	fmt.Fprint(p.w, "\r\033[K") // the level's block follows on a clean line
}

// planProgressLine is what plan's progress line says: pure, for tests.
func planProgressLine(p plan.Progress, routers int, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %d/%d engine configurations", p.Done, p.Total)
	if routers > 1 {
		fmt.Fprintf(&b, " × %d routers", routers)
	}
	fmt.Fprintf(&b, ", %d meet the SLOs", p.Meeting)
	if c := p.Cheapest; c != nil {
		fmt.Fprintf(&b, ", cheapest %d × %s tp %d", c.Replicas, c.GPU, c.TP)
		if c.USDPerHour != nil {
			fmt.Fprintf(&b, " at %.2f USD/h", *c.USDPerHour)
		}
	}
	fmt.Fprintf(&b, ", %s", elapsed.Round(time.Second))
	if p.Done > 0 && p.Done < p.Total {
		left := time.Duration(float64(elapsed) / float64(p.Done) * float64(p.Total-p.Done))
		fmt.Fprintf(&b, ", ~%s left", left.Round(time.Second))
	}
	return b.String()
}
