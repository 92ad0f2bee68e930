package bench

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/workload"
)

// TestChatTemplate: a template given, none, and the one beside the tokenizer; each problem
// on the field it is about.
func TestChatTemplate(t *testing.T) {
	const llama3 = "../tokenizer/testdata/llama3" // its tokenizer_config.json holds the template
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "t.jinja"), filepath.Join(dir, "bad", "tokenizer_config.json")
	if err := os.WriteFile(good, []byte("{% for m in messages %}{{ m.content }}{% endfor %}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"chat_template": "{% for"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad", "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		given, tok, api string
		path            string // the template's, "" none
	}{
		{good, "", "openai-chat", good},
		{"none", llama3, "openai-chat", ""},
		{"", llama3, "openai-chat", "tokenizer_config.json"},
		{"", llama3, "openai-completions", ""},
		{"", "o200k_base", "openai-chat", ""},
	} {
		tm, err := ChatTemplate(c.given, c.tok, c.api)
		if err != nil || (tm == nil) != (c.path == "") || (tm != nil && !strings.HasSuffix(tm.Path(), c.path)) {
			t.Errorf("ChatTemplate(%q, %q, %q) = %v, %v; want %q", c.given, c.tok, c.api, tm.Path(), err, c.path)
		}
	}
	for _, c := range []struct {
		given, tok, api string
		field, said     string
	}{
		{good, "", "openai-completions", "ChatTemplate,API", "openai-completions sends its prompt as it is; the APIs a server formats with a chat template are "},
		{filepath.Join(dir, "missing.jinja"), "", "openai-chat", "ChatTemplate", "chat template: stat"},
		{"", filepath.Dir(bad), "openai-chat", "Tokenizer,ChatTemplate", filepath.Dir(bad) + ": "},
	} {
		_, err := ChatTemplate(c.given, c.tok, c.api)
		var field *fielderr.Error
		if !errors.As(err, &field) || field.Field != c.field || !strings.HasPrefix(field.Err.Error(), c.said) {
			t.Errorf("ChatTemplate(%q, %q, %q): %v; want on %s: %s...", c.given, c.tok, c.api, err, c.field, c.said)
		}
	}
}

// TestSetTools: generated tools, a file's, and each problem on the fields it is about.
func TestSetTools(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(file, []byte(`[{"type":"function","function":{"name":"f"}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Spec{API: "openai-chat", Seed: 1}
	if err := s.SetTools(3, "required"); err != nil || len(s.Tools) != 3 || s.ToolChoice != "required" {
		t.Errorf("3 generated: %v, %d tools, choice %q", err, len(s.Tools), s.ToolChoice)
	}
	s = Spec{API: "openai-chat", ToolsFile: file}
	if err := s.SetTools(0, "f"); err != nil || len(s.Tools) != 1 || s.Tools[0].Name != "f" {
		t.Errorf("the file's: %v, %+v", err, s.Tools)
	}
	s = Spec{API: "openai-chat"}
	if err := s.SetTools(0, ""); err != nil || s.Tools != nil {
		t.Errorf("none: %v, %+v", err, s.Tools)
	}
	for _, c := range []struct {
		api, file string
		n         int
		choice    string
		fields    []string
	}{
		{"openai-chat", "", -1, "", []string{"Tools"}},
		{"openai-completions", file, 2, "", []string{"Tools,ToolsFile", "Tools,API"}},
		{"openai-chat", file + ".missing", 0, "", []string{"ToolsFile"}},
		{"ollama", "", 2, "auto", []string{"ToolChoice,API"}},
		{"openai-chat", "", 2, "nothing", []string{"ToolChoice"}},
		{"openai-chat", "", 0, "required", []string{"ToolChoice,Tools"}},
	} {
		s := Spec{API: c.api, ToolsFile: c.file}
		var fields []string
		for _, err := range fielderr.Split(s.SetTools(c.n, workload.ToolChoice(c.choice))) {
			var field *fielderr.Error
			if errors.As(err, &field) {
				fields = append(fields, field.Field)
			}
		}
		if !slices.Equal(fields, c.fields) {
			t.Errorf("%s, file %q, %d tools, choice %q: problems on %v, want %v", c.api, c.file, c.n, c.choice, fields, c.fields)
		}
	}
}

// TestSetChat: the server counts chat where it tokenizes and no template is given; Ollama's
// generate API, its turns joined into one message, has neither.
func TestSetChat(t *testing.T) {
	for _, c := range []struct {
		api, tok, given string
		turns           int
		template, srv   bool
	}{
		{"openai-chat", "server", "", 1, false, true},
		{"openai-chat", "server", "none", 1, false, false},
		{"openai-completions", "server", "", 1, false, false},
		{"openai-chat", "../tokenizer/testdata/llama3", "", 1, true, false},
		{"ollama-generate", "../tokenizer/testdata/llama3", "", 1, true, false},
		{"ollama-generate", "../tokenizer/testdata/llama3", "", 2, false, false},
		{"ollama-generate", "server", "", 2, false, false},
	} {
		s := Spec{API: c.api, Tokenizer: c.tok}
		s.Workload.Turns = c.turns
		if err := s.SetChat(c.given); err != nil || (s.ChatTemplate != nil) != c.template || s.ChatOnServer != c.srv {
			t.Errorf("%s, %s, %q, %d turns: %v, template %v, on the server %v; want %v, %v", c.api, c.tok, c.given, c.turns, err, s.ChatTemplate != nil, s.ChatOnServer, c.template, c.srv)
		}
	}
}

// TestSetImages: N images of the size given, seeded by the Spec; none at N 0, whatever the
// other settings; a size that does not read on the size's fields.
func TestSetImages(t *testing.T) {
	s := Spec{Seed: 7, Images: workload.ImageConfig{N: 2, Format: "png"}}
	if err := s.SetImages("64x32"); err != nil || s.Images != (workload.ImageConfig{N: 2, Width: 64, Height: 32, Format: "png", Seed: 7}) {
		t.Errorf("2 of 64x32: %v, %+v", err, s.Images)
	}
	s = Spec{Images: workload.ImageConfig{Format: "png"}}
	if err := s.SetImages("bad"); err != nil || s.Images != (workload.ImageConfig{}) {
		t.Errorf("none: %v, %+v", err, s.Images)
	}
	s = Spec{Images: workload.ImageConfig{N: 1}}
	var field *fielderr.Error
	if err := s.SetImages("0x0"); !errors.As(err, &field) || field.Field != "Images.Width,Images.Height" {
		t.Errorf("0x0: %v", err)
	}
}
