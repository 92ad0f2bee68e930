package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// oneModelServer lists one model and, as llama.cpp does, answers a chat request whatever
// model it names.
func oneModelServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"llama-3-8b","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":1}}\n\n"+
			"data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// A --model the server's list does not name is warned about, naming the models it lists;
// a listed one is not.
func TestModelNotListedWarned(t *testing.T) {
	srv := oneModelServer(t)
	for _, c := range []struct {
		model string
		warn  bool
	}{{"llama-3-70b-typo", true}, {"llama-3-8b", false}} {
		code, stdout, stderr := runCLI(t, t.Context(), "run", "--url", srv.URL, "--model", c.model, "--concurrency", "1",
			"--requests", "2", "--input-tokens", "16", "--output-tokens", "1", "--no-progress", "--seed", "1",
			"--output-dir", filepath.Join(t.TempDir(), "r"))
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", c.model, code, stdout, stderr)
		}
		want := `warning: --model "llama-3-70b-typo" is not among the models the server lists (llama-3-8b)`
		if got := strings.Contains(stderr, "is not among the models"); got != c.warn || (c.warn && !strings.Contains(stderr, want)) {
			t.Errorf("--model %s: stderr\n%s\nwant warning %v (%q)", c.model, stderr, c.warn, want)
		}
	}
}
