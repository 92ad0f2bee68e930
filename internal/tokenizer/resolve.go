package tokenizer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/internal/suggest"
)

// Encodings are the built-in encodings' names.
func Encodings() []string { return []string{"o200k_base", "cl100k_base"} }

// HubDir is the local HuggingFace hub cache, where HuggingFace's own tools put it:
// $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
func HubDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".cache", "huggingface", "hub")
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

// Resolve returns the tokenizer.json file spec names (see Load): an existing file, an
// existing folder's tokenizer.json, or a cached HuggingFace model's. It reads no file's
// contents.
func Resolve(spec string) (string, error) {
	if fi, err := os.Stat(spec); err == nil {
		if !fi.IsDir() {
			return spec, nil
		}
		for _, name := range []string{"tokenizer.json", "tokenizer.json.gz"} {
			p := filepath.Join(spec, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("tokenizer: folder %s holds no tokenizer.json", spec)
	}
	hub := HubDir()
	if !isModelID(spec) {
		return "", unknown(spec, "no such file or folder, and not a model id", hub)
	}
	dir := filepath.Join(hub, "models--"+strings.ReplaceAll(spec, "/", "--"))
	if _, err := os.Stat(dir); err != nil {
		looked := "looked in " + dir
		if _, err := os.Stat(hub); err != nil {
			looked = "looked in " + hub + ", which does not exist"
		}
		return "", unknown(spec, looked, hub)
	}
	if p := snapshotFile(dir); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("tokenizer: %s is in the HuggingFace cache (%s) but none of its snapshots has a tokenizer.json: fetch it with `huggingface-cli download %s tokenizer.json`, or give --tokenizer a tokenizer.json path", spec, dir, spec)
}

// isModelID reports whether spec can be a HuggingFace model id: "name" or "org/name" of
// letters, digits and -_. (no path syntax).
func isModelID(spec string) bool {
	parts := strings.Split(spec, "/")
	if len(parts) > 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.HasPrefix(p, "-") || strings.Contains(p, "--") {
			return false
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
				return false
			}
		}
	}
	return true
}

// snapshotFile is the tokenizer.json of a cached model: that of the snapshot refs/main
// names when it has one, else that of the most recently modified snapshot holding one.
func snapshotFile(dir string) string {
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", "main")); err == nil {
		p := filepath.Join(dir, "snapshots", strings.TrimSpace(string(ref)), "tokenizer.json")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "tokenizer.json"))
	best, bestT := "", int64(0)
	for _, p := range snaps {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if t := fi.ModTime().UnixNano(); best == "" || t > bestT {
			best, bestT = p, t
		}
	}
	return best
}

// CachedModels lists the model ids in the HuggingFace cache hub, sorted.
func CachedModels(hub string) []string {
	entries, _ := os.ReadDir(hub)
	var ids []string
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Name(), "models--"); ok && e.IsDir() {
			ids = append(ids, strings.Replace(name, "--", "/", 1))
		}
	}
	slices.Sort(ids)
	return ids
}

// unknown is the error for a spec that names nothing: what is valid, where Load looked,
// and the nearest valid name.
func unknown(spec, looked, hub string) error {
	msg := fmt.Sprintf("unknown tokenizer %q: an encoding (%s), a tokenizer.json path, a folder holding one, or a HuggingFace model id in the local cache (%s)",
		spec, strings.Join(Encodings(), ", "), looked)
	if s := nearest(spec, append(Encodings(), CachedModels(hub)...)); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return errors.New(msg)
}

// nearest is the candidate spec most likely abbreviates or misspells: one it is a
// case-insensitive prefix of or equal to, else the nearest by edit distance.
func nearest(spec string, candidates []string) string {
	l := strings.ToLower(spec)
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), l) && len(l) >= 3 {
			return c
		}
	}
	return suggest.Nearest(spec, candidates)
}
