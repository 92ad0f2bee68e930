package record

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCopyInto: a run's records go into another folder once, stay as they are in their own
// folder, and do not replace another run's.
func TestCopyInto(t *testing.T) {
	run, out := t.TempDir(), t.TempDir()
	src := filepath.Join(run, "records.jsonl")
	if err := os.WriteFile(src, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{out, out, run} { // again into out: linked there already
		if err := CopyInto(run, to); err != nil {
			t.Fatalf("CopyInto %s: %v", to, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "records.jsonl")); err != nil || string(b) != "{}\n" {
		t.Errorf("copied records %q, %v", b, err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "records.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var occupied *OccupiedError
	if err := CopyInto(run, other); !errors.As(err, &occupied) || occupied.Dir != other || occupied.Name != "records.jsonl" {
		t.Errorf("into a folder with another run's records: %v", err)
	}
	if err := CopyInto(t.TempDir(), out); err == nil {
		t.Error("a folder without records: no error")
	}
}
