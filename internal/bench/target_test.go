package bench

import (
	"slices"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
)

// TestSetURLs: the endpoints lose their trailing slashes, and each that is not an http://
// or https:// base URL is a problem of its field's.
func TestSetURLs(t *testing.T) {
	var s Server
	err := s.SetURLs("http://a:1/", []string{"https://b/", "ftp://c", "d"})
	if s.URL != "http://a:1" || !slices.Equal(s.More, []string{"https://b", "ftp://c", "d"}) {
		t.Errorf("URL %q, More %q", s.URL, s.More)
	}
	if got := fielderr.Fields(err); !slices.Equal(got, []string{"More", "More"}) {
		t.Errorf("fields %v, want More twice", got)
	}
	if err := (&Server{}).SetURLs("localhost:8000", nil); !slices.Equal(fielderr.Fields(err), []string{"URL"}) {
		t.Errorf("a URL with no scheme: %v", err)
	}
}

// TestSetGPUs: none alone reads no GPU figures; none with URLs, a URL that is not http or
// https, or such a MetricsURL, are problems of their fields'.
func TestSetGPUs(t *testing.T) {
	tel := Telemetry{MetricsURL: "none"}
	if err := tel.SetGPUs([]string{"none"}); err != nil || !tel.NoGPU || tel.GPUs != nil {
		t.Errorf("none: %+v, %v", tel, err)
	}
	tel = Telemetry{MetricsURL: "x"}
	err := tel.SetGPUs([]string{"http://g:9400/metrics", "y", "none"})
	if got := fielderr.Fields(err); !slices.Equal(got, []string{"Telemetry.MetricsURL", "Telemetry.GPUs", "Telemetry.NoGPU"}) {
		t.Errorf("fields %v", got)
	}
	tel = Telemetry{}
	if err := tel.SetGPUs([]string{"http://g:9400/metrics"}); err != nil || tel.NoGPU || len(tel.GPUs) != 1 {
		t.Errorf("one exporter: %+v, %v", tel, err)
	}
}
