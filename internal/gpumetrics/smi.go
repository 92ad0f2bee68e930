package gpumetrics

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// SourceNvidiaSMI is the local nvidia-smi, read when no exporter is given (Local).
const SourceNvidiaSMI = "nvidia-smi"

// smiQuery is what nvidia-smi is asked for (nvidia-smi --help-query-gpu): power.draw W,
// utilization.gpu and .memory %, clocks.sm MHz, memory.used MiB, temperature.gpu °C. It has
// no energy counter among them: a level's energy is its power integrated.
var smiQuery = []string{"index", "uuid", "name", "power.draw", "utilization.gpu", "utilization.memory",
	"clocks.sm", "memory.used", "temperature.gpu"}

// Runner runs a local tool and returns its standard output; tests give a fake.
type Runner interface {
	Run(ctx context.Context, path string, args ...string) ([]byte, error)
}

type execRunner struct{}

func (execRunner) Run(ctx context.Context, path string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String() + " " + string(out)); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, firstLine(msg))
		}
		return nil, err
	}
	return out, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Local is a GPU tool on this machine, read when no exporter is given and the target runs
// here.
type Local struct {
	Path string // nvidia-smi's
	Run  Runner // nil: run it
}

// FindLocal is the nvidia-smi on the PATH, if any (lookPath is exec.LookPath, or a test's).
func FindLocal(lookPath func(string) (string, error)) (*Local, bool) {
	p, err := lookPath("nvidia-smi")
	if err != nil {
		return nil, false
	}
	return &Local{Path: p}, true
}

func (l *Local) read(ctx context.Context) (Scrape, error) {
	r := l.Run
	if r == nil {
		r = execRunner{}
	}
	out, err := r.Run(ctx, l.Path, "--query-gpu="+strings.Join(smiQuery, ","), "--format=csv,noheader,nounits")
	if err != nil {
		if ctx.Err() != nil {
			return Scrape{}, fmt.Errorf("%s: timed out", SourceNvidiaSMI)
		}
		return Scrape{}, fmt.Errorf("%s: %w", SourceNvidiaSMI, err)
	}
	return ParseSMI(bytes.NewReader(out))
}

// Probe runs the tool once, so that one that fails (no driver) is told before the run.
func (l *Local) Probe(ctx context.Context) error {
	_, err := l.read(ctx)
	return err
}

// StartLocal reads l as Start reads an exporter, at most once a second: each read starts a
// process, which takes a good part of a shorter interval.
func StartLocal(ctx context.Context, l *Local, interval time.Duration, runStart time.Time) *Scraper {
	return start(ctx, SourceNvidiaSMI, "local", l.read, nil, max(interval, time.Second), runStart)
}

// ParseSMI reads nvidia-smi's CSV answer to smiQuery (noheader, nounits); "[N/A]" and
// "[Not Supported]" are figures it does not have.
func ParseSMI(r io.Reader) (Scrape, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = len(smiQuery)
	rows, err := cr.ReadAll()
	if err != nil {
		return Scrape{}, fmt.Errorf("%s: reading its CSV: %w", SourceNvidiaSMI, err)
	}
	if len(rows) == 0 {
		return Scrape{}, fmt.Errorf("%s: no GPUs listed", SourceNvidiaSMI)
	}
	s := Scrape{Source: SourceNvidiaSMI, GPUs: map[string]GPU{}, Read: map[string]Reading{}}
	num := func(v string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	for _, row := range rows {
		g := GPU{Index: strings.TrimSpace(row[0]), UUID: strings.TrimSpace(row[1]), Model: strings.TrimSpace(row[2])}
		g.Key = "local/" + g.Index
		r := nanReading()
		r.PowerW, r.GPUUtilPct, r.MemUtilPct = num(row[3]), num(row[4]), num(row[5])
		r.SMClockMHz, r.MemUsedMiB, r.TempC = num(row[6]), num(row[7]), num(row[8])
		s.GPUs[g.Key], s.Read[g.Key] = g, r
	}
	return s, nil
}
