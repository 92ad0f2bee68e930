package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// modelDir is the tokenizer test data's folder of a model (tokenizer.json.gz and a
// tokenizer_config.json holding its chat template).
func modelDir(name string) string { return filepath.Join("..", "tokenizer", "testdata", name) }

// TestRenderMatchesJinja2: the real Llama 3 and Qwen3 templates render every case exactly
// as Python's Jinja2 does in HuggingFace's set-up (testdata/golden.json, from
// testdata/render.py).
func TestRenderMatchesJinja2(t *testing.T) {
	var cases []struct {
		Name     string    `json:"name"`
		Messages []Message `json:"messages"`
	}
	readJSON(t, "testdata/cases.json", &cases)
	golden := map[string]string{}
	readJSON(t, "testdata/golden.json", &golden)
	seen := map[string]bool{}
	for _, model := range []string{"llama3", "qwen3"} {
		tmpl, err := Find(modelDir(model))
		if err != nil || tmpl == nil {
			t.Fatalf("Find(%s) = %v, %v", model, tmpl, err)
		}
		for _, c := range cases {
			key := model + "/" + c.Name
			want, ok := golden[key]
			if !ok {
				t.Fatalf("golden.json has no %s: run python3 testdata/render.py > testdata/golden.json", key)
			}
			seen[key] = true
			got, err := tmpl.Render(c.Messages)
			if err != nil {
				t.Errorf("%s: %v", key, err)
				continue
			}
			if got != want {
				t.Errorf("%s:\n got %q\nwant %q", key, got, want)
			}
		}
	}
	var extra []string
	for k := range golden {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("golden.json has cases no test renders: %v", extra)
	}
}

func TestLoadForms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	render := func(tm *Template, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		s, err := tm.Render(msgs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A list of named templates: "default" is the chat one; AddedToken objects give the
	// special tokens' text.
	cfg := write("named.json", `{"bos_token": {"content": "<s>", "lstrip": false},
		"chat_template": [{"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"}]}`)
	if got := render(Load(cfg)); got != "<s>[user]hi" {
		t.Errorf("named list: %q", got)
	}
	// A .jinja file takes its special tokens from the tokenizer_config.json beside it, and
	// Find prefers it to the config's own template.
	write(ConfigFile, `{"bos_token": "<B>", "eos_token": "<E>", "chat_template": "CONFIG"}`)
	j := write(JinjaFile, "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}")
	if got := render(Load(j)); got != "<B>hi<E>" {
		t.Errorf(".jinja file: %q", got)
	}
	if got := render(Find(dir)); got != "<B>hi<E>" {
		t.Errorf("Find: %q, want the .jinja file's", got)
	}
	if got := render(Load(dir)); got != "<B>hi<E>" {
		t.Errorf("Load(folder): %q", got)
	}

	for _, c := range []struct{ name, body, want string }{
		{"none.json", `{"bos_token": "<s>"}`, "has no chat_template"},
		{"bad.json", `{"chat_template": 3}`, "neither a string nor a list"},
		{"nodefault.json", `{"chat_template": [{"name": "rag", "template": "x"}]}`, `no "default" template (it has rag)`},
		{"syntax.jinja", "{% for m in messages %}", "syntax.jinja"},
	} {
		_, err := Load(write(c.name, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s) = %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.jinja")); err == nil {
		t.Error("Load of a missing file: no error")
	}
	empty := t.TempDir()
	if tm, err := Find(empty); tm != nil || err != nil {
		t.Errorf("Find(empty folder) = %v, %v; want nil, nil", tm, err)
	}
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "holds no") {
		t.Errorf("Load(empty folder) = %v", err)
	}

	// A chat_template.jinja is the template even where the config's own list has no
	// "default"; a config beside a template that is not JSON is an error, not a template
	// without its bos_token.
	both := t.TempDir()
	os.WriteFile(filepath.Join(both, ConfigFile), []byte(`{"bos_token": "<s>", "chat_template": [{"name": "rag", "template": "x"}]}`), 0o644)
	os.WriteFile(filepath.Join(both, JinjaFile), []byte("{{ bos_token }}{{ messages[0].content }}"), 0o644)
	if got := render(Find(both)); got != "<s>hi" {
		t.Errorf("Find(.jinja beside a list without default) = %q", got)
	}
	os.WriteFile(filepath.Join(both, ConfigFile), []byte(`{"bos_token": `), 0o644)
	if _, err := Load(filepath.Join(both, JinjaFile)); err == nil || !strings.Contains(err.Error(), ConfigFile) {
		t.Errorf("Load(.jinja beside a broken config) = %v, want an error naming it", err)
	}
}

// TestRaiseException: a template's own refusal comes back as an error naming the template.
func TestRaiseException(t *testing.T) {
	p := filepath.Join(t.TempDir(), "strict.jinja")
	if err := os.WriteFile(p, []byte(`{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a user message') }}{% endif %}ok`), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tm.Render([]Message{{Role: "assistant", Content: "x"}})
	if err == nil || !strings.Contains(err.Error(), "must start with a user message") || !strings.Contains(err.Error(), "strict.jinja") {
		t.Errorf("Render = %v", err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
