package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/bench"
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

// A dataset longer than a level's requests says how many rows each level sent, and how to
// send them all (the 30-row file at --concurrency 4 sent 12 in silence); with
// --requests 30 nothing is said.
func TestDatasetLongerThanLevelSaid(t *testing.T) {
	var rows strings.Builder
	for i := range 30 {
		fmt.Fprintf(&rows, "{\"prompt\":\"row %d of the file\"}\n", i)
	}
	data := writeTemp(t, rows.String())
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, "note: dataset jsonl:" + data + " has 30 usable rows; level 0 sends 12 (each level's request count, its default from the load, as no --requests was given): a seeded sample of the rows; --requests 30 sends every row"},
		{[]string{"--requests", "30"}, ""},
	} {
		args := append([]string{"simulate", "--sim", "textbook", "--dataset", "jsonl:" + data, "--concurrency", "4",
			"--output-tokens", "3", "--output-dir", t.TempDir()}, c.extra...)
		code, _, stderr := runCLI(t, t.Context(), args...)
		said := strings.Join(strings.Fields(stderr), " ") // notes fold at 100 columns
		if code != 0 || (c.want != "" && !strings.Contains(said, c.want)) || (c.want == "" && strings.Contains(said, "usable rows")) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant %q", c.extra, code, stderr, c.want)
		}
	}
}

// warningLine says bench's typed warnings with the flags behind them.
func TestWarningLine(t *testing.T) {
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("m%d", i))
	}
	probe := errors.New("connection refused")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&bench.UnlistedModel{Model: "x", Listed: many}, `warning: --model "x" is not among the models the server lists (m0, m1, m2, m3, m4, m5, m6, m7, m8, m9 and 2 more): `},
		{&bench.GPUProbeError{Err: probe}, "warning: connection refused; no GPU figures (--gpu-metrics URL reads an exporter instead)"},
		{&bench.GPUProbeError{URL: "http://h:9400/metrics", Err: probe}, "warning: --gpu-metrics: connection refused; the run goes on"},
		{errors.New("warning: as it is"), "warning: as it is"},
	} {
		if got := warningLine(c.err); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v: %q, want it to start %q", c.err, got, c.want)
		}
	}
}
