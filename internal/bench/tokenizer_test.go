package bench

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// A spec that does not load is invalid, of the Tokenizer field; a server without /tokenize
// is a ServerTokenizerError with its HTTP answer; "server" with no URL is invalid.
func TestLoadTokenizer(t *testing.T) {
	var invalid *InvalidError
	if _, err := LoadTokenizer(t.Context(), "no-such-encoding", "", nil); !errors.As(err, &invalid) || !isField(err, "Tokenizer") {
		t.Errorf("unknown spec: %v", err)
	}
	if _, err := LoadURLTokenizer(t.Context(), "server", ""); !errors.As(err, &invalid) || !isField(err, "Tokenizer,URL") {
		t.Errorf("server, no URL: %v", err)
	}
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	_, err := LoadURLTokenizer(t.Context(), "server", ts.URL)
	var se *ServerTokenizerError
	var he *tokenizer.HTTPError
	if !errors.As(err, &se) || !errors.As(se.Err, &he) || he.Status != http.StatusNotFound {
		t.Errorf("no /tokenize: %v", err)
	}
	if tok, err := LoadURLTokenizer(t.Context(), "o200k_base", ""); err != nil || tok == nil {
		t.Errorf("o200k_base: %v", err)
	}
}

// isField says err is a *fielderr.Error of field.
func isField(err error, field string) bool {
	var f *fielderr.Error
	return errors.As(err, &f) && f.Field == field
}
