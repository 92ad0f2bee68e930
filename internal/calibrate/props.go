package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// ReadProps reads what a llama.cpp server publishes of its limits at /props: total_slots
// (its parallel sequences, -np) and each slot's context (default_generation_settings.n_ctx;
// the KV cache is that times the slots). A server without /props (vLLM, Ollama) gives a
// zero Published and no error; one whose /props is not llama.cpp's shape gives an error.
func ReadProps(ctx context.Context, hc *http.Client, baseURL string) (Published, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return Published{}, err
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + "/props"
	u.RawQuery, u.Fragment = "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Published{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Published{}, nil // nothing published; the probe itself will say if the server is down
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Published{}, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Published{}, nil
	}
	return parseProps(b, u.String())
}

func parseProps(b []byte, where string) (Published, error) {
	var p struct {
		Slots    *int `json:"total_slots"`
		Defaults struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Slots == nil {
		return Published{}, nil // not llama.cpp's /props: nothing we read
	}
	if *p.Slots < 1 || p.Defaults.NCtx < 0 {
		return Published{}, fmt.Errorf("%s: total_slots %d and n_ctx %d are not a server's limits", where, *p.Slots, p.Defaults.NCtx)
	}
	return Published{Slots: *p.Slots, ContextTokens: p.Defaults.NCtx * *p.Slots, How: "llama.cpp /props total_slots and n_ctx"}, nil
}

// PublishedFile is where calibrate --url writes, in each probe step's run folder, what the
// server published of its limits.
const PublishedFile = "server-limits.json"

// Write writes p as PublishedFile's JSON.
func (p Published) Write(w io.Writer) error {
	return json.NewEncoder(w).Encode(p)
}

// readPublished reads dir's PublishedFile; zero and no error when there is none.
func readPublished(dir string) (Published, error) {
	b, err := os.ReadFile(filepath.Join(dir, PublishedFile))
	if errors.Is(err, os.ErrNotExist) {
		return Published{}, nil
	}
	if err != nil {
		return Published{}, err
	}
	var p Published
	if err := json.Unmarshal(b, &p); err != nil || p.Slots < 0 || p.ContextTokens < 0 {
		return Published{}, fmt.Errorf("%s: not what calibrate writes (%v)", filepath.Join(dir, PublishedFile), err)
	}
	return p, nil
}
