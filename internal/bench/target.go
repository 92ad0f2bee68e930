package bench

import (
	"net/http"
	"time"

	"github.com/llmbench/llmbench/internal/client"
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
