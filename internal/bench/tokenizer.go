package bench

import (
	"context"
	"net/http"

	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/tokenizer"
)

// ServerTokenizerError is a target that could not tokenize for the "server" tokenizer: Err
// says why (a *tokenizer.HTTPError where it answered), for the caller to say what to do.
type ServerTokenizerError struct{ Err error }

func (e *ServerTokenizerError) Error() string { return "server tokenizer: " + e.Err.Error() }
func (e *ServerTokenizerError) Unwrap() error { return e.Err }

// LoadTokenizer loads the tokenizer spec names; "server" asks the target at url's /tokenize
// through hc, once at once, so that a server that cannot tokenize stops the run before it
// starts (a *ServerTokenizerError). A spec that does not load is an *InvalidError of the
// Tokenizer field's (a *fielderr.Error).
func LoadTokenizer(ctx context.Context, spec, url string, hc *http.Client) (tokenizer.Tokenizer, error) {
	if spec != "server" {
		tok, err := tokenizer.Load(spec)
		if err != nil {
			return nil, &InvalidError{&fielderr.Error{Field: "Tokenizer", Err: err}}
		}
		return tok, nil
	}
	s := tokenizer.NewServer(url, hc)
	if _, err := s.(*tokenizer.Server).Tokenize(ctx, "Hello"); err != nil {
		return nil, &ServerTokenizerError{err}
	}
	return s, nil
}

// LoadURLTokenizer is LoadTokenizer for the commands whose only word on the target is its
// URL (dataset, tokenize): "server" needs one. Its problems are *InvalidErrors of the
// fields' (Tokenizer,URL for a missing URL; URL for one that does not parse).
func LoadURLTokenizer(ctx context.Context, spec, url string) (tokenizer.Tokenizer, error) {
	if spec != "server" {
		return LoadTokenizer(ctx, spec, "", nil)
	}
	if url == "" {
		return nil, &InvalidError{fielderr.New("Tokenizer,URL", "the server whose /tokenize to ask")}
	}
	hc, err := client.SideClient(client.Config{BaseURL: url, API: client.APIOpenAIChat})
	if err != nil {
		return nil, &InvalidError{&fielderr.Error{Field: "URL", Err: err}}
	}
	return LoadTokenizer(ctx, spec, url, hc)
}
