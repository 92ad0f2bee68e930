// Package chattemplate formats a conversation as the model's chat template does on the
// server (HuggingFace's apply_chat_template, which vLLM, SGLang, TGI and llama.cpp's server
// all follow), so a client can count the tokens the server will count.
//
// Templates are Jinja, rendered by github.com/ardanlabs/jinja (a Go Jinja engine built for
// chat templates and checked byte for byte against Python's Jinja2 in HuggingFace's set-up).
package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Template is a compiled chat template and the special tokens it refers to. Safe for
// concurrent use.
type Template struct {
	path string // the file it was read from, for messages
	t    *jinja.Template
	bos  string
	eos  string
}

// Files a model folder may hold its template in, in the order they are preferred: recent
// transformers versions write chat_template.jinja beside tokenizer_config.json and leave
// the latter without one.
const (
	JinjaFile  = "chat_template.jinja"
	ConfigFile = "tokenizer_config.json"
)

// Find returns the chat template of the model folder dir (a tokenizer.json's folder: a
// HuggingFace snapshot, or any folder laid out like one), or nil when it holds none.
// An unreadable or invalid template is an error, never silently skipped.
func Find(dir string) (*Template, error) {
	cfgPath := filepath.Join(dir, ConfigFile)
	cfg, err := besideConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	jinjaPath := filepath.Join(dir, JinjaFile)
	if src, err := os.ReadFile(jinjaPath); err == nil {
		return compile(jinjaPath, string(src), cfg.bos, cfg.eos)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if cfg.templateErr != nil {
		return nil, cfg.templateErr
	}
	if cfg.template == "" {
		return nil, nil
	}
	return compile(cfgPath, cfg.template, cfg.bos, cfg.eos)
}

// Load reads the template a user names: a folder holding one (as Find), a .json file (a
// tokenizer_config.json), or any other file as the template itself (its special tokens then
// come from a tokenizer_config.json beside it, if any).
func Load(path string) (*Template, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if fi.IsDir() {
		t, err := Find(path)
		if err == nil && t == nil {
			err = fmt.Errorf("chat template: folder %s holds no %s and no %s with a chat_template", path, JinjaFile, ConfigFile)
		}
		return t, err
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		cfg, err := readConfig(path)
		if err == nil {
			err = cfg.templateErr
		}
		if err != nil {
			return nil, err
		}
		if cfg.template == "" {
			return nil, fmt.Errorf("chat template: %s has no chat_template", path)
		}
		return compile(path, cfg.template, cfg.bos, cfg.eos)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	cfg, err := besideConfig(filepath.Join(filepath.Dir(path), ConfigFile))
	if err != nil {
		return nil, err
	}
	return compile(path, string(data), cfg.bos, cfg.eos)
}

func compile(path, src, bos, eos string) (*Template, error) {
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", path, err)
	}
	return &Template{path: path, t: t, bos: bos, eos: eos}, nil
}

// Path is the file the template was read from; "" for a nil template.
func (t *Template) Path() string {
	if t == nil {
		return ""
	}
	return t.path
}

// Render formats msgs as the server does for a chat request: with the generation prompt
// (the assistant's turn header) appended, and no tools. An error is the template's own
// (raise_exception, e.g. roles that do not alternate).
func (t *Template) Render(msgs []Message) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	out, err := t.t.Render(map[string]any{
		"messages":              list,
		"add_generation_prompt": true,
		"bos_token":             t.bos,
		"eos_token":             t.eos,
	})
	if err != nil {
		return "", fmt.Errorf("chat template %s: %w", t.path, err)
	}
	return out, nil
}

// config is what a tokenizer_config.json says about chat formatting.
type config struct {
	template, bos, eos string
	// templateErr is why chat_template could not be read: an error only where the template
	// is the config's (a chat_template.jinja beside it takes only its special tokens).
	templateErr error
}

// besideConfig reads the tokenizer_config.json beside a template, for its special tokens:
// none is no error (the zero config), an unreadable or malformed one is (its bos_token
// would be missing from every count).
func besideConfig(path string) (config, error) {
	c, err := readConfig(path)
	if errors.Is(err, os.ErrNotExist) {
		return config{}, nil
	}
	return c, err
}

func readConfig(path string) (config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return config{}, fmt.Errorf("chat template: %w", err)
	}
	return parseConfig(path, data)
}

// parseConfig reads tokenizer_config.json. chat_template is a string, or a list of named
// templates (the one named "default" is the chat one); bos_token and eos_token are strings
// or AddedToken objects ({"content": ...}).
func parseConfig(path string, data []byte) (config, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return config{}, fmt.Errorf("chat template: %s: %w", path, err)
	}
	var c config
	var err error
	if c.bos, err = tokenText(raw.BOS); err != nil {
		return config{}, fmt.Errorf("chat template: %s: bos_token: %w", path, err)
	}
	if c.eos, err = tokenText(raw.EOS); err != nil {
		return config{}, fmt.Errorf("chat template: %s: eos_token: %w", path, err)
	}
	if len(raw.ChatTemplate) == 0 || string(raw.ChatTemplate) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(raw.ChatTemplate, &c.template); err == nil {
		return c, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw.ChatTemplate, &named); err != nil {
		c.templateErr = fmt.Errorf("chat template: %s: chat_template is neither a string nor a list of {name, template}", path)
		return c, nil
	}
	var names []string
	for _, n := range named {
		if n.Name == "default" {
			c.template = n.Template
			return c, nil
		}
		names = append(names, n.Name)
	}
	c.templateErr = fmt.Errorf("chat template: %s: chat_template lists no \"default\" template (it has %s)", path, strings.Join(names, ", "))
	return c, nil
}

// tokenText is a special token's text: a JSON string, an AddedToken object, or null.
func tokenText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", errors.New("neither a string nor an object with content")
	}
	return obj.Content, nil
}

// ToolCallsText is the text a message's tool_calls (OpenAI's or Ollama's JSON) stand for,
// as an answer's tokens count them: each function's name, then its arguments (a string, or,
// as Ollama sends them, an object kept as its JSON text). Anything else is "". The client
// counts a streamed or whole answer's calls with it, and the simulated server a history's.
func ToolCallsText(raw json.RawMessage) string {
	var calls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &calls) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.Function.Name)
		args := bytes.TrimSpace(c.Function.Arguments)
		var s string
		switch {
		case len(args) == 0 || string(args) == "null":
		case json.Unmarshal(args, &s) == nil:
			b.WriteString(s)
		default:
			b.Write(args)
		}
	}
	return b.String()
}
