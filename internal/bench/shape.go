package bench

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/internal/chattemplate"
	"github.com/llmbench/llmbench/internal/client"
	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/sim"
	"github.com/llmbench/llmbench/internal/tokenizer"
	"github.com/llmbench/llmbench/internal/workload"
)

// Source is the run's workload shaped for its API (WrapSource); tok sizes prompts (nil:
// lengths only, as the simulator needs).
func (s *Spec) Source(tok tokenizer.Tokenizer) (workload.Source, error) {
	src, err := workload.New(s.Workload, tok)
	if err != nil {
		return nil, err
	}
	return s.WrapSource(src, tok)
}

// ChatTemplateBeside is the chat template beside tok's tokenizer.json, which the prompts of
// api are sized with where a server formats them with one; nil where api sends its prompt as
// it is, tok is the server's or a built-in encoding, or tok does not resolve (its own error
// is said where it is loaded). An error is a template beside tok that does not load.
func ChatTemplateBeside(tok, api string) (*chattemplate.Template, error) {
	if !client.AppliesChatTemplate(api) || tok == "server" || slices.Contains(tokenizer.Encodings(), tok) {
		return nil, nil
	}
	path, err := tokenizer.Resolve(tok)
	if err != nil {
		return nil, nil
	}
	return chattemplate.Find(filepath.Dir(path))
}

// ChatTemplate is the chat template the prompts of api are sized with: the one given (a
// template file, a tokenizer_config.json or a model folder; "none" for none), else the one
// beside tok's tokenizer.json (ChatTemplateBeside). Each error is a *fielderr.Error: on
// ChatTemplate,API a template given for an API that sends its prompt as it is, on
// ChatTemplate a template given that does not load, on Tokenizer,ChatTemplate the one
// beside tok that does not.
func ChatTemplate(given, tok, api string) (*chattemplate.Template, error) {
	switch {
	case given == "none":
		return nil, nil
	case given != "" && !client.AppliesChatTemplate(api):
		return nil, fielderr.New("ChatTemplate,API", "%s sends its prompt as it is; the APIs a server formats with a chat template are %s", api, strings.Join(client.ChatTemplateAPIs(), ", "))
	case given != "":
		tm, err := chattemplate.Load(given)
		if err != nil {
			return nil, &fielderr.Error{Field: "ChatTemplate", Err: err}
		}
		return tm, nil
	}
	tm, err := ChatTemplateBeside(tok, api)
	if err != nil {
		return nil, &fielderr.Error{Field: "Tokenizer,ChatTemplate", Err: fmt.Errorf("%s: %w", tok, err)}
	}
	return tm, nil
}

// UseChat sets how the workload counts chat prompts, once the tokenizer is loaded: with
// the chat template and tok, or by the server (a tokenizer.Server) when it can format
// messages; otherwise message text alone. An error says why the server cannot.
func (s *Spec) UseChat(tok tokenizer.Tokenizer) error {
	s.Workload.OneMessage = s.API == client.APIOllamaGenerate
	switch {
	case s.ChatTemplate != nil:
		s.Workload.Chat = workload.WatchChat(workload.TemplateChat(s.ChatTemplate, tok))
	case s.ChatOnServer:
		srv, ok := tok.(*tokenizer.Server)
		if !ok {
			return nil
		}
		if _, err := srv.CountChat([]workload.Message{{Role: "user", Content: "Hello"}}); err != nil {
			return err
		}
		s.Workload.Chat = workload.WatchChat(srv)
	}
	return nil
}

// WrapSource shapes the workload's requests for the API: tools offered, batches of inputs
// (embeddings), a query with documents (rerank), or prompts with images.
func (s *Spec) WrapSource(src workload.Source, tok tokenizer.Tokenizer) (workload.Source, error) {
	if len(s.Tools) > 0 {
		src = workload.WithTools(src, s.Tools, s.ToolChoice)
	}
	switch {
	case s.Images.N > 0:
		return workload.WithImages(src, s.Images), nil
	case s.BatchSize > 0:
		return workload.Batched(src, s.BatchSize), nil
	case s.Documents > 0:
		qc := s.Workload
		qc.InputTokens, qc.Seed = workload.Fixed(s.QueryTokens), s.Workload.Seed^0x7175657279 // "query"
		qc.PrefixTokens, qc.PrefixGroups = 0, 1
		q, err := workload.New(qc, tok)
		if err != nil {
			return nil, err
		}
		return workload.Reranked(q, src, s.Documents), nil
	}
	return src, nil
}

// ShapeVirtual makes a simulated record what run would have recorded for the API: a
// request that offered tools gets the tool call serve would have streamed (tools: how the
// profile's model answers them); the engine streams every request, so without a stream
// its tokens become one event at the end, and an embeddings or rerank request (a prefill)
// carries its inputs and no output.
func (s *Spec) ShapeVirtual(tools sim.ToolConfig) func(*workload.Request, *record.Record) {
	return func(req *workload.Request, r *record.Record) {
		s.toolCall(tools, req, r)
		if !client.Unstreamed(s.API, s.NoStream) {
			return
		}
		r.Unstreamed = true
		n := r.Events.Tokens()
		r.Events = record.Events{}
		switch {
		case s.BatchSize > 0 || s.Documents > 0:
			r.Inputs, r.Documents = int32(s.BatchSize), int32(s.Documents)
			r.OutputTokens, r.OutputTokensSource = 0, ""
		case n > 0 && r.Error == nil:
			r.Events.Base = r.Sent
			r.Events.Append(r.Done, n)
		}
	}
}

// toolCall makes a simulated answer to a request that offered tools the tool call serve
// would have streamed, by the same rule (sim.ToolConfig.CallsTool on the request's own
// tool_choice, keyed by its place in the run): all its output tokens are the call's, from
// its first token.
func (s *Spec) toolCall(tools sim.ToolConfig, req *workload.Request, r *record.Record) {
	if len(req.Tools) == 0 || r.Error != nil || r.OutputTokens <= 0 {
		return
	}
	key := uint64(r.Level)<<40 ^ uint64(r.Repeat)<<32 ^ uint64(r.Index)
	if !tools.CallsTool(string(req.ToolChoice), s.Seed, key) {
		return
	}
	first, ok := r.FirstToken()
	if !ok {
		return
	}
	r.ToolCallTokens, r.FirstToolCall = int32(min(r.OutputTokens, math.MaxInt32)), first
}

// SourceFit is what FitToSource found and did, for the caller to say.
type SourceFit struct {
	Info workload.Info // the workload fitted to
	// Reused is the most requests a level sends (warm-up included) where that is more than
	// the dataset's rows, which are then reused from the start (repeated prompts can hit a
	// server's prefix cache and flatter TTFT); 0 otherwise.
	Reused int
	// Sampled are the levels of a fixed request count that send fewer requests than the
	// dataset has rows: a seeded sample of them. None in a search.
	Sampled []LevelCount
	// Replayed says a trace given no load replaces the default ladder with one open-loop
	// level of its own arrivals (Spec.Levels[0]).
	Replayed bool
}

// LevelCount is a level (its Index) and the requests it sends.
type LevelCount struct{ Index, Requests int }

// FitToSource fits the ladder to the workload once it is loaded: a trace given no load
// replays its own arrivals once, as one open-loop level, instead of the default
// closed-loop ladder that would ignore them, as long as its SLO verdict needs by default
// (Finish).
func (s *Spec) FitToSource(info workload.Info) SourceFit {
	fit := SourceFit{Info: info}
	if !info.Trace && info.Rows > 0 {
		most := 0
		for _, l := range s.Levels {
			n := l.Requests + l.Warmup
			most = max(most, n)
			if l.Duration == 0 && n < info.Rows && s.Search == "" {
				fit.Sampled = append(fit.Sampled, LevelCount{l.Index, n})
			}
		}
		if most > info.Rows {
			fit.Reused = most
		}
	}
	if !info.Trace || !s.DefaultLoad || info.Rows == 0 || info.Span <= 0 {
		return fit
	}
	l := s.Base
	l.Rate = float64(info.Rows) / info.Span.Seconds() // nominal: the trace sets the arrivals
	if l.Duration == 0 && s.Requests == 0 {
		l.Requests = info.Rows
	}
	s.Levels = []load.Level{s.Finish(l, 0, s.Requests)}
	if l.Requests > 0 {
		s.Levels[0].Requests = l.Requests
	}
	fit.Replayed = true
	return fit
}

// SetChat sets how the chat prompts are sized: with the template given, else the one beside
// Tokenizer's tokenizer.json (ChatTemplate, whose errors it returns), or by the server where
// Tokenizer is the server's and no template is given.
func (s *Spec) SetChat(given string) error {
	var err error
	s.ChatTemplate, err = ChatTemplate(given, s.Tokenizer, s.API)
	s.ChatOnServer = given == "" && s.Tokenizer == "server" && client.AppliesChatTemplate(s.API)
	if s.API == client.APIOllamaGenerate && s.Workload.Turns > 1 {
		// Its prompt is the whole conversation joined, which Ollama formats as one
		// user message: the turns are not the template's messages, so message text
		// alone is sized (and the server's count differs by the template's tokens).
		s.ChatTemplate, s.ChatOnServer = nil, false
	}
	return err
}

// SetImages sets the images each prompt carries: Images.N of size (ParseImageSize's WxH),
// drawn from Seed; none when N is 0. A size that does not read is a *fielderr.Error on
// Images.Width,Images.Height.
func (s *Spec) SetImages(size string) error {
	if s.Images.N == 0 {
		s.Images = workload.ImageConfig{}
		return nil
	}
	var err error
	s.Images.Width, s.Images.Height, err = workload.ParseImageSize(size)
	s.Images.Seed = s.Seed
	if err != nil {
		return &fielderr.Error{Field: "Images.Width,Images.Height", Err: err}
	}
	return nil
}

// SetTools sets the function definitions every request offers, n generated from Seed or
// those of ToolsFile, and the tool_choice sent. Each problem is a *fielderr.Error: on Tools
// a count out of range, on Tools,ToolsFile both given, on ToolsFile a file that does not
// load, on Tools,API and ToolChoice,API an API that takes no tools or no tool_choice, on
// ToolChoice,Tools a choice of a tool where none are offered (workload.ErrNoTools), and on
// ToolChoice a choice the tools do not allow.
func (s *Spec) SetTools(n int, choice workload.ToolChoice) error {
	if n == 0 && s.ToolsFile == "" && choice == "" {
		return nil
	}
	var errs []error
	switch {
	case n < 0 || n > workload.MaxTools:
		errs = append(errs, fielderr.New("Tools", "%d: must be in 0..%d", n, workload.MaxTools))
	case n > 0 && s.ToolsFile != "":
		errs = append(errs, fielderr.New("Tools,ToolsFile", "give one (generated definitions, or a file's)"))
	case s.ToolsFile != "":
		var err error
		if s.Tools, err = workload.LoadTools(s.ToolsFile); err != nil {
			errs = append(errs, &fielderr.Error{Field: "ToolsFile", Err: err})
		}
	default:
		s.Tools = workload.GenerateTools(n, s.Seed)
	}
	if !slices.Contains(client.ToolAPIs, s.API) {
		errs = append(errs, fielderr.New("Tools,API", "are for %s, not %s", strings.Join(client.ToolAPIs, ", "), s.API))
	} else if choice != "" && !slices.Contains(client.ToolChoiceAPIs, s.API) {
		errs = append(errs, fielderr.New("ToolChoice,API", "%s takes no tool_choice (the model decides)", s.API))
	}
	s.ToolChoice = choice
	if len(errs) == 0 {
		if err := workload.ValidateTools(s.Tools, choice); err != nil {
			field := "ToolChoice"
			if errors.Is(err, workload.ErrNoTools) {
				field = "ToolChoice,Tools"
			}
			errs = append(errs, &fielderr.Error{Field: field, Err: err})
		}
	}
	return errors.Join(errs...)
}
