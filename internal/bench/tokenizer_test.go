package bench

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A spec that does not load is invalid; a server without /tokenize is told what to give
// instead; "server" with no URL is invalid.
func TestLoadTokenizer(t *testing.T) {
	var invalid *InvalidError
	if _, err := LoadTokenizer(t.Context(), "no-such-encoding", "", nil, false); !errors.As(err, &invalid) || !strings.HasPrefix(err.Error(), "--tokenizer: ") {
		t.Errorf("unknown spec: %v", err)
	}
	if _, err := LoadURLTokenizer(t.Context(), "server", ""); !errors.As(err, &invalid) {
		t.Errorf("server, no URL: %v", err)
	}
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	_, err := LoadURLTokenizer(t.Context(), "server", ts.URL)
	var se *ServerTokenizerError
	if !errors.As(err, &se) || !strings.HasPrefix(se.Msg, "--tokenizer server: /tokenize: HTTP 404") || !strings.Contains(se.Msg, "this server has no /tokenize") {
		t.Errorf("no /tokenize: %v", err)
	}
	if tok, err := LoadURLTokenizer(t.Context(), "o200k_base", ""); err != nil || tok == nil {
		t.Errorf("o200k_base: %v", err)
	}
}
