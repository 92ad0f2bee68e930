package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeHub makes a HuggingFace cache under a temporary HF_HOME holding model id with the
// given snapshots (name -> tokenizer.json contents, "" for a snapshot without one; each
// file a link into blobs/, as huggingface_hub makes them); main names the snapshot
// refs/main points at ("" for no refs/main).
func fakeHub(t *testing.T, id string, snaps map[string]string, main string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_HUB_CACHE", "")
	dir := filepath.Join(home, "hub", "models--"+strings.ReplaceAll(id, "/", "--"))
	for name, content := range snaps {
		sd := filepath.Join(dir, "snapshots", name)
		if err := os.MkdirAll(sd, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			// As huggingface_hub lays it out: the snapshot's file links to a blob.
			blob := filepath.Join(dir, "blobs", "blob-"+name)
			if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(blob, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "..", "blobs", "blob-"+name), filepath.Join(sd, "tokenizer.json")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if main != "" {
		if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(main+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestLoadModelID: a model id is resolved from the local HuggingFace cache, refs/main's
// snapshot first; nothing else is needed (no network).
func TestLoadModelID(t *testing.T) {
	llama2, err := os.ReadFile(tokenizerFile("llama2"))
	if err != nil {
		t.Fatal(err)
	}
	qwen, err := os.ReadFile(tokenizerFile("qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	// Load reads gzipped files whatever their name, so the fixtures go in as they are.
	home := fakeHub(t, "meta-llama/Llama-2-7b-hf", map[string]string{"aaa": string(qwen), "bbb": string(llama2)}, "bbb")
	tok, err := Load("meta-llama/Llama-2-7b-hf")
	if err != nil {
		t.Fatal(err)
	}
	if tok.(*bpe).sp == nil {
		t.Error("refs/main names the Llama 2 snapshot, but another was loaded")
	}
	want := filepath.Join(home, "hub", "models--meta-llama--Llama-2-7b-hf", "snapshots", "bbb", "tokenizer.json")
	if p, err := Resolve("meta-llama/Llama-2-7b-hf"); err != nil || p != want {
		t.Errorf("Resolve = %q, %v; want %q", p, err, want)
	}

	// Without refs/main: the snapshot that has a tokenizer.json.
	fakeHub(t, "Qwen/Qwen3-8B", map[string]string{"old": "", "new": string(qwen)}, "")
	if _, err := Load("Qwen/Qwen3-8B"); err != nil {
		t.Fatal(err)
	}

	// A cached model without tokenizer.json says so and what to do.
	fakeHub(t, "org/no-tok", map[string]string{"s1": ""}, "s1")
	if _, err := Load("org/no-tok"); err == nil || !strings.Contains(err.Error(), "none of its snapshots has a tokenizer.json") {
		t.Errorf("err = %v", err)
	}
}

// TestLoadPathFirst: a value naming an existing file or folder is a path, even when it
// also looks like a model id.
func TestLoadPathFirst(t *testing.T) {
	fakeHub(t, "x/y", nil, "")
	dir := t.TempDir()
	data, err := os.ReadFile(tokenizerFile("qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "org", "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "org", "model", "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if _, err := Load("org/model"); err != nil {
		t.Fatalf("a folder org/model holding tokenizer.json: %v", err)
	}
	if err := os.MkdirAll("empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("empty"); err == nil || !strings.Contains(err.Error(), "holds no tokenizer.json") {
		t.Errorf("empty folder: %v", err)
	}
}

// TestLoadUnknown: an unknown name lists the valid ones, says where it looked and
// suggests the nearest.
func TestLoadUnknown(t *testing.T) {
	home := fakeHub(t, "meta-llama/Llama-3.1-8B", map[string]string{"s": "{}"}, "s")
	hub := filepath.Join(home, "hub")
	tests := []struct{ spec, want string }{
		{"o200k", `unknown tokenizer "o200k": an encoding (o200k_base, cl100k_base), a tokenizer.json path, a folder holding one, or a HuggingFace model id in the local cache (looked in ` + filepath.Join(hub, "models--o200k") + `); did you mean o200k_base?`},
		{"cl100k-base", "did you mean cl100k_base?"},
		{"meta-llama/llama-3.1-8b", "did you mean meta-llama/Llama-3.1-8B?"},
		{"./nope/tokenizer.json", "no such file or folder, and not a model id"},
	}
	for _, tt := range tests {
		_, err := Load(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%q) = %v\nwant it to contain %s", tt.spec, err, tt.want)
		}
	}
	t.Setenv("HF_HOME", filepath.Join(home, "absent"))
	if _, err := Load("org/model"); err == nil || !strings.Contains(err.Error(), "which does not exist") {
		t.Errorf("absent cache: %v", err)
	}
}
