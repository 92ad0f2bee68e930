package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/chattemplate"
)

// Server tokenizes on the target server: vLLM's and llama.cpp's POST /tokenize and
// /detokenize. It is exact for whatever model the server runs, at the cost of one HTTP
// round trip per call.
type Server struct {
	BaseURL string
	// Model is sent as "model" (vLLM needs it when it serves several models); may be empty.
	Model   string
	Client  *http.Client
	Timeout time.Duration // per call; 0 means 30 s

	mu  sync.Mutex
	err error
	// chat is how the server formats a conversation for CountChat, once found.
	chat chatRoute
}

// chatRoute is the server's way to count a formatted conversation.
type chatRoute int

const (
	chatUnknown  chatRoute = iota
	chatTokenize           // vLLM: /tokenize with messages applies the chat template
	chatApply              // llama.cpp: /apply-template, then /tokenize of its prompt
	chatNone               // neither
)

// NewServer returns a tokenizer that calls baseURL's /tokenize and /detokenize. A nil
// httpClient means http.DefaultClient.
func NewServer(baseURL string, httpClient *http.Client) Tokenizer {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Server{BaseURL: strings.TrimRight(baseURL, "/"), Client: httpClient}
}

func (s *Server) Name() string { return "server" }

// Encode returns nil when the server fails; Err reports why. Use Tokenize for the error.
func (s *Server) Encode(text string) []int {
	ids, err := s.Tokenize(context.Background(), text)
	if err != nil {
		s.setErr(err)
		return nil
	}
	return ids
}

// Decode returns "" when the server fails; Err reports why.
func (s *Server) Decode(ids []int) string {
	text, err := s.Detokenize(context.Background(), ids)
	if err != nil {
		s.setErr(err)
		return ""
	}
	return text
}

// Err returns the first error an Encode or Decode call met, or nil.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Server) setErr(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Tokenize encodes text without adding special tokens (BOS), like the other tokenizers.
// The request carries both servers' field names: vLLM reads prompt/add_special_tokens,
// llama.cpp content/add_special.
func (s *Server) Tokenize(ctx context.Context, text string) ([]int, error) {
	return s.tokenize(ctx, text, false)
}

// tokenize encodes text, adding the special tokens (BOS) a prompt gets when special is set.
func (s *Server) tokenize(ctx context.Context, text string, special bool) ([]int, error) {
	req := map[string]any{"prompt": text, "content": text, "add_special_tokens": special, "add_special": special}
	if s.Model != "" {
		req["model"] = s.Model
	}
	var resp struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := s.post(ctx, "/tokenize", req, &resp); err != nil {
		return nil, err
	}
	if resp.Tokens == nil {
		return nil, errors.New(`/tokenize: the response has no "tokens"`)
	}
	ids := make([]int, len(resp.Tokens))
	for i, raw := range resp.Tokens {
		// llama.cpp with_pieces returns {"id": n, "piece": ...}; plain ids otherwise.
		if err := json.Unmarshal(raw, &ids[i]); err != nil {
			var withPiece struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(raw, &withPiece) != nil || withPiece.ID == nil {
				return nil, fmt.Errorf("/tokenize: token %d is %s, not an id", i, raw)
			}
			ids[i] = *withPiece.ID
		}
	}
	return ids, nil
}

// CountChat is msgs' prompt tokens as the server counts a chat request with them: vLLM's
// /tokenize with messages (its chat template and generation prompt, no special tokens
// added, as its chat path), else llama.cpp's /apply-template and /tokenize of that prompt
// with the BOS its chat path adds (the prompt comes without it). The route that answers
// first is kept.
func (s *Server) CountChat(msgs []chattemplate.Message) (int, error) {
	ctx := context.Background()
	s.mu.Lock()
	route := s.chat
	s.mu.Unlock()
	var errs []error
	if route == chatUnknown || route == chatTokenize {
		n, err := s.countMessages(ctx, msgs)
		if err == nil && n > 0 {
			s.setRoute(chatTokenize)
			return n, nil
		}
		if err == nil {
			err = errNoChatTokens
		}
		if route == chatTokenize {
			return 0, err
		}
		errs = append(errs, err)
	}
	if route == chatUnknown || route == chatApply {
		n, err := s.countApplied(ctx, msgs)
		if err == nil {
			s.setRoute(chatApply)
			return n, nil
		}
		if route == chatApply {
			return 0, err
		}
		errs = append(errs, err)
		// Neither route is there only when both said so (a route missing, or messages
		// ignored); a timeout or a refused conversation says nothing of the routes.
		if !routeMissing(errs[0], true) || !routeMissing(errs[1], false) {
			return 0, errors.Join(errs...)
		}
		s.setRoute(chatNone)
	}
	return 0, errors.New("the server formats no chat messages for counting (vLLM's /tokenize takes messages, llama.cpp's /apply-template formats them; this server does neither)")
}

// routeMissing says whether a chat route's error means the server has no such route: an
// HTTP 404, 405 or 501, or (for /tokenize, which llama.cpp answers with an empty list for
// messages it ignores) no tokens.
func routeMissing(err error, tokenize bool) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.NoRoute()
	}
	return tokenize && errors.Is(err, errNoChatTokens)
}

// errNoChatTokens is /tokenize's answer of no tokens for messages: a server that ignores
// them (llama.cpp) answers so.
var errNoChatTokens = errors.New("/tokenize: no tokens for the messages")

// Source names the chat formatting for summaries.
func (s *Server) Source() string { return "server" }

func (s *Server) setRoute(r chatRoute) {
	s.mu.Lock()
	s.chat = r
	s.mu.Unlock()
}

// countMessages is vLLM's route: the ids /tokenize gives for the messages; 0 from a server
// that ignores them (llama.cpp answers an empty list).
func (s *Server) countMessages(ctx context.Context, msgs []chattemplate.Message) (int, error) {
	req := map[string]any{"messages": msgs, "add_generation_prompt": true, "add_special_tokens": false}
	if s.Model != "" {
		req["model"] = s.Model
	}
	var resp struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := s.post(ctx, "/tokenize", req, &resp); err != nil {
		return 0, err
	}
	return len(resp.Tokens), nil
}

// countApplied is llama.cpp's route.
func (s *Server) countApplied(ctx context.Context, msgs []chattemplate.Message) (int, error) {
	var applied struct {
		Prompt *string `json:"prompt"`
	}
	if err := s.post(ctx, "/apply-template", map[string]any{"messages": msgs}, &applied); err != nil {
		return 0, err
	}
	if applied.Prompt == nil {
		return 0, errors.New(`/apply-template: the response has no "prompt"`)
	}
	ids, err := s.tokenize(ctx, *applied.Prompt, true)
	return len(ids), err
}

// Detokenize decodes ids; vLLM answers "prompt", llama.cpp "content".
func (s *Server) Detokenize(ctx context.Context, ids []int) (string, error) {
	if ids == nil {
		ids = []int{}
	}
	req := map[string]any{"tokens": ids}
	if s.Model != "" {
		req["model"] = s.Model
	}
	var resp struct {
		Prompt  *string `json:"prompt"`
		Content *string `json:"content"`
	}
	if err := s.post(ctx, "/detokenize", req, &resp); err != nil {
		return "", err
	}
	switch {
	case resp.Prompt != nil:
		return *resp.Prompt, nil
	case resp.Content != nil:
		return *resp.Content, nil
	}
	return "", errors.New(`/detokenize: the response has neither "prompt" nor "content"`)
}

// HTTPError is a /tokenize or /detokenize call the server answered with an error status.
type HTTPError struct {
	Path   string // "/tokenize"
	Status int
	Body   []byte // the response body, bounded
}

// NoRoute says the server has no such route: an HTTP 404, 405 or 501.
func (e *HTTPError) NoRoute() bool {
	return e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed || e.Status == http.StatusNotImplemented
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Path, e.Status)
	if b := bytes.TrimSpace(e.Body); len(b) > 0 {
		msg += " " + string(b)
	}
	return msg
}

func (s *Server) post(ctx context.Context, path string, body, out any) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the target's, named by the caller
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &HTTPError{Path: path, Status: resp.StatusCode, Body: truncate(data, 4096)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: the response is not JSON: %w", path, err)
	}
	return nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
