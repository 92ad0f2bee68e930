package gpumetrics

import (
	"context"
	"fmt"
	"net/http"
	neturl "net/url"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/servermetrics"
)

const (
	// DefaultInterval is how often an exporter is scraped unless told otherwise.
	DefaultInterval = time.Second
	// maxSamples bounds a level's series (9 h at one scrape a second); past it every other
	// sample is dropped, which keeps the counters' readings' ends and the power's shape.
	maxSamples = 1 << 15
	// finalTimeout bounds the scrape Stop takes at the level's end, so that the level's
	// last requests fall inside the samples without a slow exporter holding up the next.
	finalTimeout = 500 * time.Millisecond
)

// Sample is one successful scrape: T is its midpoint, as an offset from the run's start.
type Sample struct {
	T    time.Duration
	Read map[string]Reading // by GPU key
}

// Series is what one exporter said over one level.
type Series struct {
	URL       string
	Source    string // the exporter recognised; SourceUnknown when none was
	Interval  time.Duration
	Scrapes   int // attempted, failures included
	Failed    int
	LastError string
	GPUs      map[string]GPU
	Samples   []Sample
}

// Scraper polls one exporter (or a local tool) in its own goroutine until Stop.
type Scraper struct {
	read     func(ctx context.Context) (Scrape, error)
	host     string // names GPUs whose source gives no hostname
	interval time.Duration
	runStart time.Time
	parent   context.Context
	close    func()
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu     sync.Mutex
	series Series
	lastOK bool
}

// Start scrapes url at once and then every interval (DefaultInterval when <= 0) until Stop
// or ctx ends; each scrape times out after one interval. Failures are counted, never fatal.
// runStart is the run's t = 0. hc nil: a client of its own.
func Start(ctx context.Context, url string, interval time.Duration, runStart time.Time, hc *http.Client) *Scraper {
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 1
		hc = &http.Client{Transport: tr}
	}
	host := url
	if u, err := neturl.Parse(url); err == nil && u.Host != "" {
		host = u.Host
	}
	read := func(ctx context.Context) (Scrape, error) {
		mfs, err := servermetrics.FetchFamilies(ctx, hc, url)
		if err != nil {
			return Scrape{}, err
		}
		sc := mapFamilies(mfs)
		if len(sc.GPUs) == 0 {
			return Scrape{}, noGPUs(url)
		}
		return sc, nil
	}
	return start(ctx, url, host, read, hc.CloseIdleConnections, interval, runStart)
}

func start(ctx context.Context, name, host string, read func(context.Context) (Scrape, error), closeFn func(), interval time.Duration, runStart time.Time) *Scraper {
	if interval <= 0 {
		interval = DefaultInterval
	}
	loopCtx, cancel := context.WithCancel(ctx)
	s := &Scraper{read: read, host: host, interval: interval, runStart: runStart, parent: ctx,
		close: closeFn, cancel: cancel, done: make(chan struct{}),
		series: Series{URL: name, Source: SourceUnknown, Interval: interval, GPUs: map[string]GPU{}}}
	go s.loop(loopCtx)
	return s
}

// loop scrapes on servermetrics' fixed schedule.
func (s *Scraper) loop(ctx context.Context) {
	defer close(s.done)
	servermetrics.Every(ctx, s.interval, func() { s.scrape(ctx, s.interval) })
}

// Stop ends the polling, takes one last short scrape (unless the exporter was failing or
// the run is being cancelled) so that the samples reach past the level's last request, and
// returns the series. A level shorter than one scrape, whose first scrape Stop cut off, gets
// that last one too: the exporter had not failed. Calling it again returns the same series.
func (s *Scraper) Stop() Series {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		s.mu.Lock()
		ok := s.lastOK || s.series.Scrapes == 0
		s.mu.Unlock()
		if ok && s.parent.Err() == nil {
			s.scrape(s.parent, min(finalTimeout, s.interval))
		}
		if s.close != nil {
			s.close()
		}
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
	sc, err := s.read(sctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // stopped mid-scrape: the level is over, not the exporter's fault
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
	s.series.Source = sc.Source
	read := make(map[string]Reading, len(sc.Read))
	for k, g := range sc.GPUs {
		if g.Host == "" {
			// Several exporters without hostnames would otherwise share GPU 0's name.
			g.Key = s.host + "/" + g.Index
		}
		s.series.GPUs[g.Key] = g
		read[g.Key] = sc.Read[k]
	}
	ss := append(s.series.Samples, Sample{T: t, Read: read})
	if len(ss) > maxSamples {
		kept := ss[:0]
		for i := 0; i < len(ss)-1; i += 2 {
			kept = append(kept, ss[i])
		}
		ss = append(kept, ss[len(ss)-1]) // the newest stays: the level's end needs it
	}
	s.series.Samples = ss
}

// Probe scrapes url once, before the run, so that an exporter that does not answer, or
// answers without GPU metrics, is told at once; the source it recognised otherwise.
func Probe(ctx context.Context, url string, hc *http.Client) (string, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	mfs, err := servermetrics.FetchFamilies(ctx, hc, url)
	if err != nil {
		return "", err
	}
	sc := mapFamilies(mfs)
	if len(sc.GPUs) == 0 {
		return "", noGPUs(url)
	}
	return sc.Source, nil
}

func noGPUs(url string) error {
	return fmt.Errorf("GET %s: Prometheus text without dcgm-exporter's or AMD device-metrics-exporter's GPU metrics (is it the exporter's /metrics?)", url)
}
