// Package progress draws live progress lines on a terminal: a load level's requests done,
// its rate, time left and recent latencies, or any line a command redraws while it works.
// Where the writer is not a terminal it draws nothing, so that logs and CI output stay clean.
package progress

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
	"github.com/llmbench/llmbench/internal/record"
)

// Level shows a level's progress on a terminal: the level, requests done and failed, the
// rate, the time left (by count or by the level's duration), and, once a level runs for
// more than a few seconds, its recent TTFT and TPOT P50/P99 and output tokens/s. It is
// redrawn four times a second from the first moment. A simulated level's time is the
// virtual clock's, read from its records (a 600 s level may take a second of wall time).
type Level struct {
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

// NewLevel starts drawing the progress of the level name on w: total requests, or d long
// when timed; virtual when its records are on a simulation's clock. Disabled, or where w
// is not a terminal, it draws nothing.
func NewLevel(w io.Writer, name string, total int, d time.Duration, virtual, disabled bool) *Level {
	if disabled || !terminal(w) {
		return &Level{}
	}
	p := &Level{w: w, name: name, total: total, d: d, start: time.Now(), virtual: virtual,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go p.loop()
	return p
}

func (p *Level) loop() {
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
func (p *Level) Add(r *record.Record) {
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

func (p *Level) draw() {
	p.mu.Lock()
	name, elapsed := p.name, time.Since(p.start)
	if p.virtual {
		name, elapsed = "simulated "+name, max(p.vLast-p.vFirst, 0)
	}
	line := levelLine(name, p.total, p.d, elapsed, p.done, p.failed, p.toks, &p.ttft, &p.tpot)
	p.mu.Unlock()
	redraw(p.w, line)
}

// Finish clears the progress line.
func (p *Level) Finish() {
	if p.w == nil {
		return
	}
	close(p.stop)
	<-p.stopped
	fmt.Fprint(p.w, "\r\033[K") // the level's block follows on a clean line
}

// levelLine is what a level's line says: pure, for tests.
func levelLine(name string, total int, d, elapsed time.Duration, done, failed, toks int, ttft, tpot *window) string {
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

// Line redraws the line a function gives four times a second on a terminal (nothing
// elsewhere), like a level's, for work that is not a level (a plan's search, a fit).
type Line struct {
	w             io.Writer
	line          func() string
	mu            sync.Mutex // a redraw, or a line said while the bar is up
	stop, stopped chan struct{}
}

// NewLine starts redrawing line on w; disabled, or where w is not a terminal, it draws
// nothing.
func NewLine(w io.Writer, disabled bool, line func() string) *Line {
	if disabled || !terminal(w) {
		return &Line{}
	}
	l := &Line{w: w, line: line, stop: make(chan struct{}), stopped: make(chan struct{})}
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

// Say prints a whole line to out (the same terminal, or not) with the bar cleared first, so
// that the line does not land behind the bar's text; the next redraw puts the bar back.
func (l *Line) Say(out io.Writer, line string) {
	if l.w != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprint(l.w, "\r\033[K")
	}
	fmt.Fprintln(out, line)
}

// Finish clears the line.
func (l *Line) Finish() {
	if l.w == nil {
		return
	}
	close(l.stop)
	<-l.stopped
	fmt.Fprint(l.w, "\r\033[K")
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
// Unwrap method, as console.FoldNotes has); false when w does not end at a terminal.
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
