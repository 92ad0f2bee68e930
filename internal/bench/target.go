package bench

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/route"
)

// Server is the server a live run sends to and how: its endpoints, model, credentials and
// transport (Target is the server once opened). A simulation has none but its profile
// (Spec.SimProfile).
type Server struct {
	URL  string   // the first endpoint ("" until a run without one starts its simulator)
	More []string // the endpoints after URL a run balances over
	// Balance spreads requests over URL and More (route's policies); SessionHeader, when
	// set, is the header requests carry their session in.
	Balance, SessionHeader string
	Model                  string // "" is the first the server lists
	ModelChecked           bool   // Model was found in the server's list already: no warning
	APIKey, CACert         string
	Endpoint               string // the API's path, when not its usual one
	SaveText               bool   // keep generated text in records

	Timeout, IdleTimeout time.Duration
	KeepAlive            bool
	// TestRequest sends the first level's first request before measuring: a failure stops
	// the run (TestRequestError), an answer warms the server; it is not recorded.
	TestRequest       bool
	IgnoreEOS         bool
	Insecure, HTTP2   bool
	ReadStamps        bool
	Headers           http.Header
	ExtraBody         map[string]any
	Temperature, TopP *float64
}

// Client is the client of s's server, speaking s's API; what it tells the caller
// (OnServerCloses) and how it dials are the caller's to add.
func (s Spec) Client() client.Config {
	t := s.Server
	return client.Config{
		BaseURL: t.URL, API: s.API, Model: t.Model, APIKey: t.APIKey, Headers: t.Headers,
		ExtraBody: t.ExtraBody, IgnoreEOS: t.IgnoreEOS, NoStream: s.NoStream, Endpoint: t.Endpoint,
		Timeout: t.Timeout, IdleTimeout: t.IdleTimeout, Temperature: t.Temperature, TopP: t.TopP,
		CACert: t.CACert, Insecure: t.Insecure, HTTP2: t.HTTP2, ReadStamps: t.ReadStamps,
		DisableKeepAlive: !t.KeepAlive, SaveText: t.SaveText, SessionHeader: t.SessionHeader,
	}
}

// SetURLs sets the endpoints, first's URL and more's More, each without a trailing slash,
// with each that is not an http:// or https:// base URL a *fielderr.Error on its field.
func (s *Server) SetURLs(first string, more []string) error {
	var errs []error
	check := func(field, u string) string {
		if !httpURL(u) {
			errs = append(errs, fielderr.New(field, "%q must be an http:// or https:// base URL such as http://127.0.0.1:8000", u))
		}
		return strings.TrimRight(u, "/")
	}
	if first != "" {
		s.URL = check("URL", first)
	}
	for _, u := range more {
		s.More = append(s.More, check("More", u))
	}
	return errors.Join(errs...)
}

// httpURL says whether s is an http:// or https:// URL with a host.
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// SetGPUs sets the GPU exporters a live run reads: gpus, their /metrics URLs, or "none"
// alone, no GPU figures (not the local GPUs' either). Each problem with them or with
// MetricsURL is a *fielderr.Error on its field; "none" given with URLs is NoGPU's.
func (t *Telemetry) SetGPUs(gpus []string) error {
	var errs []error
	if m := t.MetricsURL; m != "" && m != "none" && !httpURL(m) {
		errs = append(errs, fielderr.New("Telemetry.MetricsURL", "%q must be an http:// or https:// URL", m))
	}
	for _, u := range gpus {
		if u == "none" {
			if len(gpus) > 1 {
				errs = append(errs, fielderr.New("Telemetry.NoGPU", "given with URLs; none reads no GPU metrics at all"))
			}
			t.GPUs, t.NoGPU = nil, true
			break
		}
		if !httpURL(u) {
			errs = append(errs, fielderr.New("Telemetry.GPUs", "%q must be an http:// or https:// URL of a dcgm-exporter's or AMD device-metrics-exporter's /metrics, or none", u))
		}
		t.GPUs = append(t.GPUs, u)
	}
	return errors.Join(errs...)
}

// SetBalance sets how requests are spread: by balance, else round-robin where there are
// several endpoints. The session header is set where requests are balanced by session, or
// where it was given (given): a router in front of one URL reads it too.
func (s *Server) SetBalance(balance, sessionHeader string, given bool) {
	if s.Balance = balance; s.Balance == "" && len(s.More) > 0 {
		s.Balance = route.RoundRobin
	}
	if s.Balance == route.Session || given {
		s.SessionHeader = sessionHeader
	}
}
