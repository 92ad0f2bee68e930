package calibrate

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStepFiles: a step's folder gets what the server published and its trace, which
// readPublished reads back; RemoveStepFiles leaves no folder behind a step that measured
// nothing, and keeps one that holds a run's files.
func TestStepFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "01-mixed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pub := Published{Slots: 2, ContextTokens: 8192, SeqTokens: 4096}
	trace, err := WriteStepFiles(dir, pub, Step{Trace: []TraceRow{{At: 1500 * time.Microsecond, Input: 10, Output: 2}}})
	if err != nil || trace != filepath.Join(dir, StepTrace) {
		t.Fatalf("WriteStepFiles: %q, %v", trace, err)
	}
	if b, err := os.ReadFile(trace); err != nil || string(b) != "{\"timestamp\": 1.500, \"input_length\": 10, \"output_length\": 2}\n" {
		t.Errorf("trace %q, %v", b, err)
	}
	if got, err := readPublished(dir); err != nil || got != pub {
		t.Errorf("published %+v, %v: want %+v", got, err, pub)
	}
	if trace, err := WriteStepFiles(t.TempDir(), Published{}, Step{}); err != nil || trace != "" {
		t.Errorf("a step with no trace, nothing published: %q, %v", trace, err)
	}
	RemoveStepFiles(dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s stays after RemoveStepFiles (%v)", dir, err)
	}
	kept := t.TempDir()
	if err := os.WriteFile(filepath.Join(kept, "records.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	RemoveStepFiles(kept)
	if _, err := os.Stat(filepath.Join(kept, "records.jsonl")); err != nil {
		t.Errorf("a measured step's records went: %v", err)
	}
}
