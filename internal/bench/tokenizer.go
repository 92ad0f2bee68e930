package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// ServerTokenizerError is a target that could not tokenize for --tokenizer server: what
// it answered, and what to do.
type ServerTokenizerError struct{ Msg string }

func (e *ServerTokenizerError) Error() string { return e.Msg }

// LoadTokenizer loads --tokenizer's spec; "server" asks the target at url's /tokenize
// through hc, once at once, so that a server that cannot tokenize stops the run before it
// starts (a *ServerTokenizerError). keyGiven says an API key was sent, for the hint on an
// HTTP 401 or 403. A spec that does not load is an *InvalidError.
func LoadTokenizer(ctx context.Context, spec, url string, hc *http.Client, keyGiven bool) (tokenizer.Tokenizer, error) {
	if spec != "server" {
		tok, err := tokenizer.Load(spec)
		if err != nil {
			return nil, &InvalidError{fmt.Errorf("--tokenizer: %w", err)}
		}
		return tok, nil
	}
	s := tokenizer.NewServer(url, hc)
	if _, err := s.(*tokenizer.Server).Tokenize(ctx, "Hello"); err != nil {
		msg := "--tokenizer server: " + err.Error()
		var he *tokenizer.HTTPError
		if errors.As(err, &he) {
			msg = fmt.Sprintf("--tokenizer server: %s: HTTP %d", he.Path, he.Status)
			if m := client.ErrorMessage(he.Body); m != "" {
				msg += " " + m
			}
			switch hint := client.HTTPHint(he.Status, keyGiven); {
			case hint != "":
				msg += ": " + hint
			case he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed || he.Status == http.StatusNotImplemented:
				msg += ": this server has no /tokenize (vLLM, llama.cpp's server and llmbench serve have one; Ollama has none): give --tokenizer the model's HuggingFace id (from the local cache, e.g. meta-llama/Llama-3.1-8B), its tokenizer.json, or an encoding (o200k_base, cl100k_base)"
			}
		}
		return nil, &ServerTokenizerError{msg}
	}
	return s, nil
}

// LoadURLTokenizer is LoadTokenizer for the commands whose only word on the target is its
// URL (dataset, tokenize): "server" needs one.
func LoadURLTokenizer(ctx context.Context, spec, url string) (tokenizer.Tokenizer, error) {
	if spec != "server" {
		return LoadTokenizer(ctx, spec, "", nil, false)
	}
	if url == "" {
		return nil, &InvalidError{errors.New("--tokenizer server needs --url (the server whose /tokenize to ask)")}
	}
	hc, err := client.SideClient(client.Config{BaseURL: url, API: client.APIOpenAIChat})
	if err != nil {
		return nil, &InvalidError{fmt.Errorf("--url: %w", err)}
	}
	return LoadTokenizer(ctx, spec, url, hc, false)
}
