package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// With no --model, a target whose model list fails says why and what to do: a plain web
// server's 404 page as its gist, nothing listening as a connection to check.
func TestModelListFailureHints(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct{ url, want string }{
		{ts.URL, "HTTP 404 404 page not found: the server has no model list there: give --model"},
		{dead, "connection refused: nothing listens there: is the server up"},
	} {
		code, _, stderr := runCLI(t, t.Context(), "run", "--url", c.url, "--requests", "1", "--no-progress", "--output-dir", filepath.Join(t.TempDir(), "r"))
		if code != ExitFailure || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and %q", c.url, code, stderr, ExitFailure, c.want)
		}
	}
}
