package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

const (
	// DefaultInterval is how often a level is scraped unless told otherwise.
	DefaultInterval = time.Second
	// maxBody bounds one exposition; vLLM's is ~100 KB, a runaway endpoint must not eat memory.
	maxBody = 16 << 20
	// maxSamples bounds a level's series (9 h at one scrape a second); past it the series is
	// thinned to every other sample and the stride doubles.
	maxSamples = 1 << 15
	// finalTimeout bounds the scrape Stop takes at the level's end, so that counters cover
	// the whole level without a slow endpoint holding up the next one.
	finalTimeout = 500 * time.Millisecond
	// acceptText asks for the classic text format: servers that negotiate would otherwise
	// answer OpenMetrics, which the text parser does not read.
	acceptText = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
)

// Sample is one successful scrape: T is the scrape's midpoint, as an offset from the run's
// start on the monotonic clock.
type Sample struct {
	T time.Duration
	Values
}

// Series is what a Scraper gathered over one level.
type Series struct {
	URL       string
	Family    string // the last known family seen; FamilyUnknown when none was
	Interval  time.Duration
	Scrapes   int // attempted, failures included
	Failed    int
	LastError string
	Samples   []Sample // successful scrapes, in time order
}

// Scraper polls one metrics endpoint in its own goroutine until Stop.
type Scraper struct {
	url      string
	interval time.Duration
	runStart time.Time
	parent   context.Context
	client   *http.Client
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex
	series   Series
	stride   int  // keep every stride-th scrape once the series has been thinned
	seen     int  // successful scrapes so far
	floating bool // the last sample is off-stride and is replaced by the next one
	lastOK   bool
}

// Start scrapes url at once and then every interval (DefaultInterval when <= 0) until Stop
// or ctx ends. Each scrape times out after one interval; failures are counted, never fatal.
// runStart is the run's t = 0, for the samples' times. hc is the client to scrape with (the
// target's transport, so TLS, proxy and credentials are the benchmark's); nil: a plain one.
func Start(ctx context.Context, url string, interval time.Duration, runStart time.Time, hc *http.Client) *Scraper {
	if hc == nil {
		hc = newClient()
	}
	return start(ctx, url, interval, runStart, hc)
}

func start(ctx context.Context, url string, interval time.Duration, runStart time.Time, c *http.Client) *Scraper {
	if interval <= 0 {
		interval = DefaultInterval
	}
	loopCtx, cancel := context.WithCancel(ctx)
	s := &Scraper{
		url: url, interval: interval, runStart: runStart, parent: ctx,
		client: c,
		cancel: cancel,
		done:   make(chan struct{}),
		series: Series{URL: url, Family: FamilyUnknown, Interval: interval},
		stride: 1,
	}
	go s.loop(loopCtx)
	return s
}

// newClient has its own transport so that scrapes neither wait for nor take connections
// from the benchmark's pool, and one idle connection is plenty.
func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1
	return &http.Client{Transport: tr}
}

// loop scrapes on a fixed schedule (Every).
func (s *Scraper) loop(ctx context.Context) {
	defer close(s.done)
	Every(ctx, s.interval, func() { s.scrape(ctx, s.interval) })
}

// Every calls f at once and then on a fixed schedule (start, start+interval, …) until ctx
// ends: one scraped within its interval (it times out there) ends exactly when the next is
// due, which then runs at once; one that overruns a slot restarts the schedule from now.
func Every(ctx context.Context, interval time.Duration, f func()) {
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		f()
		next = next.Add(interval)
		wait := time.Until(next)
		if wait < 0 {
			next, wait = time.Now(), 0
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// Stop ends the polling, takes one last short scrape (unless the endpoint was failing or
// the run is being cancelled) so that counters cover the level to its end, and returns the
// series. Calling it again returns the same series.
func (s *Scraper) Stop() Series {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.mu.Lock()
		ok := s.lastOK
		s.mu.Unlock()
		if ok && s.parent.Err() == nil {
			s.scrape(s.parent, min(finalTimeout, s.interval))
		}
		s.client.CloseIdleConnections()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.series
	out.Samples = append([]Sample(nil), s.series.Samples...)
	return out
}

func (s *Scraper) scrape(ctx context.Context, timeout time.Duration) {
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	fam, v, err := fetch(sctx, s.client, s.url)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // stopped mid-scrape: the level is over, not the endpoint's fault
	}
	end := time.Now()
	t := start.Add(end.Sub(start) / 2).Sub(s.runStart)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.series.Scrapes++
	s.lastOK = err == nil
	if err != nil {
		s.series.Failed++
		s.series.LastError = err.Error()
		return
	}
	if fam != FamilyUnknown {
		s.series.Family = fam
	}
	s.add(Sample{T: t, Values: v})
}

// add appends a sample, keeping memory bounded: once maxSamples are held, every other one
// is dropped and from then on only every stride-th scrape is kept, except that the newest
// always stands in the last slot (counters need the level's last reading).
func (s *Scraper) add(smp Sample) {
	onStride := s.seen%s.stride == 0
	s.seen++
	ss := s.series.Samples
	if s.floating {
		ss = ss[:len(ss)-1] // the previous newest was off-stride: this one replaces it
	}
	ss = append(ss, smp)
	s.floating = !onStride
	if len(ss) > maxSamples {
		// The on-stride samples are scrapes 0, stride, 2*stride, …: keeping every other one
		// leaves the multiples of twice the stride.
		body := ss
		if s.floating {
			body = ss[:len(ss)-1]
		}
		newestKept := !s.floating && (len(body)-1)%2 == 0
		kept := ss[:0]
		for i := 0; i < len(body); i += 2 {
			kept = append(kept, body[i])
		}
		if !newestKept {
			kept = append(kept, smp)
		}
		ss, s.floating = kept, !newestKept
		s.stride *= 2
	}
	s.series.Samples = ss
}

// Probe fetches url once and reports which server family its Prometheus text comes from;
// an error when it does not answer, is not Prometheus text, or carries none of the known
// servers' metrics. The CLI scrapes the target's /metrics by default only when Probe
// succeeds. hc is as for Start.
func Probe(ctx context.Context, url string, hc *http.Client) (string, error) {
	if hc == nil {
		hc = newClient()
		defer hc.CloseIdleConnections()
	}
	fam, _, err := fetch(ctx, hc, url)
	if err != nil {
		return "", err
	}
	if fam == FamilyUnknown {
		return "", fmt.Errorf("%s: Prometheus text without vLLM, SGLang, TGI or llama.cpp metrics", url)
	}
	return fam, nil
}

func fetch(ctx context.Context, c *http.Client, url string) (string, Values, error) {
	mfs, err := FetchFamilies(ctx, c, url)
	if err != nil {
		return "", nanValues(), err
	}
	fam, v := mapFamilies(mfs)
	return fam, v, nil
}

// FetchFamilies GETs url once and parses its Prometheus text (format 0.0.4), bounded in
// size; its errors name the URL and say what went wrong (no answer, an HTTP status,
// OpenMetrics, too large, not Prometheus text). Other exporters' scrapers (GPU telemetry)
// read their endpoints through it.
func FetchFamilies(ctx context.Context, c *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics URL: %w", err)
	}
	req.Header.Set("Accept", acceptText)
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("GET %s: timed out", url)
		}
		return nil, fmt.Errorf("GET %s: %w", url, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("GET %s: HTTP %d %s", url, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/openmetrics-text") {
		return nil, fmt.Errorf("GET %s: answered OpenMetrics (%s) although asked for text/plain 0.0.4", url, ct)
	}
	lr := &io.LimitedReader{R: resp.Body, N: maxBody + 1}
	mfs, err := ParseText(lr)
	if err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("GET %s: exposition larger than %d MiB", url, maxBody>>20)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: timed out reading the body", url)
		}
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("GET %s: exposition larger than %d MiB", url, maxBody>>20)
	}
	return mfs, nil
}

// unwrapURLError drops *url.Error's repetition of method and URL, which the caller adds.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// DefaultURL is the metrics endpoint of a target base URL: its /metrics beside the API
// root (a trailing /v1 is dropped, as vLLM, SGLang and TGI serve /metrics at the root).
func DefaultURL(baseURL string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("base URL %q: %w", baseURL, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want scheme://host[:port][/path]", baseURL)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path = p + "/metrics"
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}
