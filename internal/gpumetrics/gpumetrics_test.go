package gpumetrics

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/gpumetrics/gputest"
)

func readScrape(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

func TestParseDCGM(t *testing.T) {
	sc, err := Parse(strings.NewReader(string(readScrape(t, "dcgm-8xh100.prom"))))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Source != SourceDCGM || len(sc.GPUs) != 8 {
		t.Fatalf("source %q, %d GPUs; want dcgm-exporter, 8", sc.Source, len(sc.GPUs))
	}
	g := sc.GPUs["gpu-node-07/2"]
	if g.Model != "NVIDIA H100 80GB HBM3" || g.UUID != "GPU-3b8d4e6a-0c53-4f7a-9e2c-5a9b7d4f3c62" || g.Index != "2" {
		t.Errorf("GPU 2 = %+v", g)
	}
	r := sc.Read["gpu-node-07/2"]
	want := Reading{PowerW: 640, EnergyJ: 92345678.901, GPUUtilPct: 100, MemUtilPct: 66, SMClockMHz: 1755,
		MemUsedMiB: 74210, TempC: 60, Throttle: 4, HasThrottle: true}
	if !near(r.EnergyJ, want.EnergyJ) {
		t.Errorf("energy %v J, want %v (mJ counter / 1000)", r.EnergyJ, want.EnergyJ)
	}
	r.EnergyJ = want.EnergyJ
	if r != want {
		t.Errorf("GPU 2 reading\n got %+v\nwant %+v", r, want)
	}
	if got := ThrottleReasons(r.Throttle); !slices.Equal(got, []string{"sw_power_cap"}) {
		t.Errorf("throttle reasons %v", got)
	}
}

func TestParseAMD(t *testing.T) {
	sc, err := Parse(strings.NewReader(string(readScrape(t, "amd-2xmi300x.prom"))))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Source != SourceAMD || len(sc.GPUs) != 2 {
		t.Fatalf("source %q, %d GPUs; want AMD, 2", sc.Source, len(sc.GPUs))
	}
	r := sc.Read["mi300-node-02/1"]
	want := Reading{PowerW: 688, EnergyJ: 8798765.432, GPUUtilPct: 84, MemUtilPct: 39, SMClockMHz: 2085,
		MemUsedMiB: 179120, TempC: 69}
	if !near(r.EnergyJ, want.EnergyJ) {
		t.Errorf("energy %v J, want %v (µJ counter / 1e6)", r.EnergyJ, want.EnergyJ)
	}
	r.EnergyJ = want.EnergyJ
	if r != want {
		t.Errorf("GPU 1 reading\n got %+v\nwant %+v", r, want)
	}
	if g := sc.GPUs["mi300-node-02/1"]; g.UUID != "692251001317" || g.Model != "AMD Instinct MI300X" {
		t.Errorf("GPU 1 = %+v", g)
	}
}

func TestThrottleReasonsNamesUnknownBits(t *testing.T) {
	if got := ThrottleReasons(0x4 | 0x40 | 0x1000); !slices.Equal(got, []string{"sw_power_cap", "hw_thermal_slowdown", "0x1000"}) {
		t.Errorf("got %v", got)
	}
}

// series builds one GPU's series at the given times (s) from (power, energy) pairs; NaN
// leaves a figure out.
func series(interval time.Duration, ts []float64, power, energy []float64) Series {
	s := Series{URL: "http://x/metrics", Source: SourceDCGM, Interval: interval, Scrapes: len(ts),
		GPUs: map[string]GPU{"h/0": {Key: "h/0", Index: "0", Host: "h"}}}
	for i, t := range ts {
		r := nanReading()
		r.PowerW, r.EnergyJ = power[i], energy[i]
		s.Samples = append(s.Samples, Sample{T: time.Duration(t * float64(time.Second)), Read: map[string]Reading{"h/0": r}})
	}
	return s
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// The derivations on series whose figures are worked out by hand.
func TestSummarizeByHand(t *testing.T) {
	n := math.NaN()
	ts := []float64{0, 1, 2, 3}
	for _, tc := range []struct {
		name          string
		s             Series
		windows       []Window
		energy, power float64
		from          string
	}{
		// Counter 100, 300, 50 (a restart: 50 J since), 250 J: increase 200 + 50 + 200 = 450
		// over 0-3 s. Window 0.5-2.5 s: 300-200=100 at 0.5 → cum 100; cum at 2.5 = 250+100 = 350;
		// energy 250 J.
		{"counter with a restart", series(time.Second, ts, []float64{n, n, n, n}, []float64{100, 300, 50, 250}),
			[]Window{{sec(0.5), sec(2.5)}}, 250, 125, FromCounter},
		// Power 100, 200, 200, 400 W, no counter. 0.5-2.5 s: 0.5-1: (150+200)/2*0.5 = 87.5;
		// 1-2: 200; 2-2.5: (200+300)/2*0.5 = 125: 412.5 J over 2 s.
		{"integrated power", series(time.Second, ts, []float64{100, 200, 200, 400}, []float64{n, n, n, n}),
			[]Window{{sec(0.5), sec(2.5)}}, 412.5, 206.25, FromPower},
		// Past the readings by less than an interval: the end reading holds (power) or the end
		// slope goes on (counter). Power 100 W held 0.5 s before 0: 50 J more than 0-1 s's 100.
		{"power held past the first reading", series(time.Second, ts, []float64{100, 100, 100, 100}, []float64{n, n, n, n}),
			[]Window{{sec(-0.5), sec(1)}}, 150, 100, FromPower},
		{"counter slope past the last reading", series(time.Second, ts, []float64{n, n, n, n}, []float64{0, 10, 20, 40}),
			[]Window{{sec(2), sec(3.5)}}, 30, 20, FromCounter},
		// Two runs of a repeated level: 0-1 s and 2-3 s, 10 + 20 J over 2 s.
		{"two windows", series(time.Second, ts, []float64{n, n, n, n}, []float64{0, 10, 20, 40}),
			[]Window{{sec(0), sec(1)}, {sec(2), sec(3)}}, 30, 15, FromCounter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := Summarize([]Series{tc.s}, tc.windows, 60, 3)
			if sum.EnergyJ == nil {
				t.Fatalf("no energy: %s", sum.Note)
			}
			if !near(*sum.EnergyJ, tc.energy) || !near(*sum.PowerW, tc.power) || sum.EnergyFrom != tc.from {
				t.Errorf("energy %v J from %s, power %v W; want %v J from %s, %v W", *sum.EnergyJ, sum.EnergyFrom, *sum.PowerW, tc.energy, tc.from, tc.power)
			}
			if !near(*sum.JoulesPerOutputToken, tc.energy/60) || !near(*sum.JoulesPerRequest, tc.energy/3) || !near(*sum.OutputTokensPerJoule, 60/tc.energy) {
				t.Errorf("J/token %v, J/request %v, tokens/J %v", *sum.JoulesPerOutputToken, *sum.JoulesPerRequest, *sum.OutputTokensPerJoule)
			}
		})
	}
}

// Readings that do not reach the window within an interval give no energy, and say why;
// a level without output tokens has energy but no J/token, never a 0.
func TestSummarizeAbsentNotZero(t *testing.T) {
	n := math.NaN()
	s := series(time.Second, []float64{0, 1, 2}, []float64{100, 100, 100}, []float64{n, n, n})
	sum := Summarize([]Series{s}, []Window{{sec(0), sec(4)}}, 10, 1)
	if sum.EnergyJ != nil || sum.PowerW != nil || sum.JoulesPerOutputToken != nil {
		t.Errorf("energy from readings that stop 2 s before the window's end: %+v", sum)
	}
	if !strings.Contains(sum.Note, "readings span 0.000-2.000 s, not the window 0.000-4.000 s") {
		t.Errorf("note %q", sum.Note)
	}
	sum = Summarize([]Series{s}, []Window{{sec(0), sec(2)}}, 0, 0)
	if sum.EnergyJ == nil || *sum.EnergyJ != 200 || sum.JoulesPerOutputToken != nil || sum.JoulesPerRequest != nil {
		t.Errorf("no tokens: %+v", sum)
	}
	b, _ := json.Marshal(sum)
	for _, k := range []string{"joules_per_output_token", "joules_per_request"} {
		if strings.Contains(string(b), k) {
			t.Errorf("summary.json has %s for a level without output: %s", k, b)
		}
	}
	if Summarize(nil, nil, 1, 1) != nil {
		t.Error("a summary of nothing scraped")
	}
}

// handlerClient serves requests in memory with h, so that scrapes run inside a synctest
// bubble, and gives up when the request's context ends, as a real transport does.
func handlerClient(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, r)
		}()
		select {
		case <-done:
			return rec.Result(), nil
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A level 10 s into the run, scraped every second for 5.5 s from a replayed scrape whose
// counters advance at its recorded power: the level's energy is the power summed over the
// GPUs times the window, by hand. DCGM, 8 GPUs: 612.5 + 598.25 + 640 + 587.75 + 605.5 + 621
// + 593.25 + 630.75 = 4889 W; AMD, 2 GPUs: 702 + 688 = 1390 W. With and without counters.
func TestScrapeReplayedExporters(t *testing.T) {
	for _, tc := range []struct {
		file   string
		gpus   int
		power  float64
		noCtr  bool
		source string
		from   string
	}{
		{"dcgm-8xh100.prom", 8, 4889, false, SourceDCGM, FromCounter},
		{"dcgm-8xh100.prom", 8, 4889, true, SourceDCGM, FromPower},
		{"amd-2xmi300x.prom", 2, 1390, false, SourceAMD, FromCounter},
	} {
		t.Run(tc.file, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runStart := time.Now()
				time.Sleep(10 * time.Second)
				h, err := gputest.Replay(readScrape(t, tc.file), runStart, tc.noCtr)
				if err != nil {
					t.Fatal(err)
				}
				s := Start(t.Context(), "http://node/metrics", time.Second, runStart, handlerClient(h))
				time.Sleep(5500 * time.Millisecond)
				ser := s.Stop()
				if ser.Scrapes != 7 || ser.Failed != 0 || len(ser.Samples) != 7 {
					t.Fatalf("%d scrapes, %d failed, %d samples; want 7 (0..5 s and Stop's)", ser.Scrapes, ser.Failed, len(ser.Samples))
				}
				// The measured requests: 10.25-15.25 s of the run, 1000 output tokens, 50 requests.
				sum := Summarize([]Series{ser}, []Window{{sec(10.25), sec(15.25)}}, 1000, 50)
				if sum.Source != tc.source || sum.GPUs != tc.gpus || sum.EnergyFrom != tc.from {
					t.Fatalf("source %q, %d GPUs, energy from %q: %s", sum.Source, sum.GPUs, sum.EnergyFrom, sum.Note)
				}
				e := tc.power * 5
				if sum.EnergyJ == nil || !near(*sum.EnergyJ, e) || !near(*sum.PowerW, tc.power) || !near(*sum.PowerPerGPUW, tc.power/float64(tc.gpus)) {
					t.Fatalf("energy %v J, power %v W; want %v J, %v W", sum.EnergyJ, sum.PowerW, e, tc.power)
				}
				if !near(*sum.JoulesPerOutputToken, e/1000) || !near(*sum.JoulesPerRequest, e/50) || !near(*sum.OutputTokensPerJoule, 1000/e) {
					t.Errorf("J/token %v (want %v), J/request %v (want %v), tokens/J %v", *sum.JoulesPerOutputToken, e/1000, *sum.JoulesPerRequest, e/50, *sum.OutputTokensPerJoule)
				}
				if len(sum.Series) != 1 || len(sum.Series[0].PowerW) != 7 || sum.Series[0].PowerW[3] != tc.power {
					t.Errorf("series %+v", sum.Series)
				}
			})
		})
	}
}

// The DCGM node's gauges, by hand: utilisation (97+95+100+93+96+98+94+99)/8 = 96.5%, max
// 100; SM clock (7*1980 + 1755)/8 = 1951.875 MHz; throttled by GPU 2's power cap.
func TestSummarizeGaugesDCGM(t *testing.T) {
	sc, err := Parse(strings.NewReader(string(readScrape(t, "dcgm-8xh100.prom"))))
	if err != nil {
		t.Fatal(err)
	}
	s := Series{URL: "u", Source: sc.Source, Interval: time.Second, Scrapes: 2, GPUs: sc.GPUs,
		Samples: []Sample{{T: 0, Read: sc.Read}, {T: time.Second, Read: sc.Read}}}
	sum := Summarize([]Series{s}, []Window{{0, time.Second}}, 100, 1)
	if *sum.Utilization != (Stat{Mean: 96.5, Max: 100}) || *sum.SMClockMHz != (Stat{Mean: 1951.875, Max: 1980}) {
		t.Errorf("utilization %+v, SM clock %+v", *sum.Utilization, *sum.SMClockMHz)
	}
	if !slices.Equal(sum.ThrottleReasons, []string{"sw_power_cap"}) || len(sum.PerGPU) != 8 || sum.PerGPU[2].Index != "2" ||
		!slices.Equal(sum.PerGPU[2].ThrottleReasons, []string{"sw_power_cap"}) || sum.PerGPU[0].ThrottleReasons != nil {
		t.Errorf("throttle %v, per GPU %+v", sum.ThrottleReasons, sum.PerGPU)
	}
	// The counters did not move between the two identical scrapes: 0 J, measured, is 0.
	if sum.EnergyJ == nil || *sum.EnergyJ != 0 || sum.OutputTokensPerJoule != nil {
		t.Errorf("energy %v, tokens/J %v", sum.EnergyJ, sum.OutputTokensPerJoule)
	}
}

// An exporter that fails, one that is not there and one without GPU metrics: every scrape
// counted as failed with the URL and the cause, no figure made up, and one warning line.
func TestBrokenExporters(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "dcgm: no GPUs found", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"))
	}))
	defer other.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/metrics"
	gone.Close()
	for _, tc := range []struct{ url, want string }{
		{failing.URL + "/metrics", "HTTP 503 dcgm: no GPUs found"},
		{goneURL, "connection refused"},
		{other.URL + "/metrics", "without dcgm-exporter's or AMD device-metrics-exporter's GPU metrics"},
	} {
		if _, err := Probe(context.Background(), tc.url, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Probe(%s) = %v, want %q", tc.url, err, tc.want)
		}
		s := Start(context.Background(), tc.url, 50*time.Millisecond, time.Now(), nil)
		time.Sleep(120 * time.Millisecond) // real time: a real server's failures
		ser := s.Stop()
		if ser.Scrapes == 0 || ser.Failed != ser.Scrapes || !strings.Contains(ser.LastError, tc.want) || !strings.Contains(ser.LastError, tc.url) {
			t.Errorf("%s: %d scrapes, %d failed, last error %q", tc.url, ser.Scrapes, ser.Failed, ser.LastError)
		}
		sum := Summarize([]Series{ser}, []Window{{0, 100 * time.Millisecond}}, 100, 5)
		if sum.EnergyJ != nil || sum.PowerW != nil || sum.JoulesPerOutputToken != nil || sum.Utilization != nil || sum.GPUs != 0 {
			t.Errorf("%s: figures from a failing exporter: %+v", tc.url, sum)
		}
		w := ser.Warning("level c=1")
		if !strings.HasPrefix(w, "warning: --gpu-metrics "+tc.url+": every scrape failed during level c=1") || !strings.Contains(w, tc.want) || strings.Contains(w, "\n") {
			t.Errorf("warning %q", w)
		}
	}
}

// fakeSMI answers as nvidia-smi would, or fails as one without a driver does.
type fakeSMI struct {
	out  []byte
	err  error
	args []string
}

func (f *fakeSMI) Run(_ context.Context, path string, args ...string) ([]byte, error) {
	f.args = append([]string{path}, args...)
	return f.out, f.err
}

// The local nvidia-smi, read every second: its power integrated (it has no energy counter),
// 4889 W over a 5 s window by hand; GPU 7's "[N/A]" utilisation is left out of the mean:
// (97+95+100+93+96+98+94)/7 = 96.142857…%.
func TestLocalNvidiaSMI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeSMI{out: readScrape(t, "nvidia-smi-8xh100.csv")}
		runStart := time.Now()
		s := StartLocal(t.Context(), &Local{Path: "/usr/bin/nvidia-smi", Run: fake}, time.Second, runStart)
		time.Sleep(5500 * time.Millisecond)
		ser := s.Stop()
		if want := "--query-gpu=index,uuid,name,power.draw,utilization.gpu,utilization.memory,clocks.sm,memory.used,temperature.gpu"; len(fake.args) != 3 || fake.args[1] != want || fake.args[2] != "--format=csv,noheader,nounits" {
			t.Errorf("ran %q", fake.args)
		}
		sum := Summarize([]Series{ser}, []Window{{sec(0.25), sec(5.25)}}, 1000, 50)
		if sum.Source != SourceNvidiaSMI || sum.GPUs != 8 || sum.EnergyFrom != FromPower || sum.EnergyJ == nil || !near(*sum.EnergyJ, 4889*5) {
			t.Fatalf("source %q, %d GPUs, energy %v from %q: %s", sum.Source, sum.GPUs, sum.EnergyJ, sum.EnergyFrom, sum.Note)
		}
		if !near(sum.Utilization.Mean, 673.0/7) || sum.PerGPU[7].Utilization != nil || sum.PerGPU[7].UUID != "GPU-8a3c9d1f-5b08-4e2f-8d7b-0f4a2c9e8b17" {
			t.Errorf("utilization %+v, GPU 7 %+v", sum.Utilization, sum.PerGPU[7])
		}
	})
	failing := &Local{Path: "nvidia-smi", Run: &fakeSMI{err: errors.New("exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")}}
	if err := failing.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "nvidia-smi: exit status 9: NVIDIA-SMI has failed") {
		t.Errorf("probe: %v", err)
	}
	if _, err := ParseSMI(strings.NewReader("0, GPU-x, H100, 600\n")); err == nil {
		t.Error("a short row read as a GPU")
	}
}

// slowFirstSMI takes 2 s to answer its first run (a process started on a loaded machine),
// then answers at once.
type slowFirstSMI struct {
	out  []byte
	runs int
}

func (f *slowFirstSMI) Run(ctx context.Context, _ string, _ ...string) ([]byte, error) {
	f.runs++
	if f.runs == 1 {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.out, nil
}

// A level shorter than the first scrape, which Stop cuts off, still gets Stop's last scrape:
// the tool had not failed, and a run of 0.15 s reads its GPUs.
func TestStopReadsALevelShorterThanAScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &slowFirstSMI{out: readScrape(t, "nvidia-smi-8xh100.csv")}
		s := StartLocal(t.Context(), &Local{Path: "nvidia-smi", Run: fake}, time.Second, time.Now())
		time.Sleep(150 * time.Millisecond)
		ser := s.Stop()
		if fake.runs != 2 || ser.Scrapes != 1 || ser.Failed != 0 || len(ser.Samples) != 1 {
			t.Errorf("%d runs, %d scrapes (%d failed), %d samples; want the cut-off one and Stop's own", fake.runs, ser.Scrapes, ser.Failed, len(ser.Samples))
		}
	})
}
