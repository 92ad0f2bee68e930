package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSave(t *testing.T) {
	dir := t.TempDir()
	s := ladderSummary(t, "", []int{1, 4})
	if err := Save(dir, s); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := ReadJSON(f)
	if err != nil || len(back.Levels) != 2 {
		t.Fatalf("read back: %v", err)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "summary.csv"))
	if n := strings.Count(string(csv), "\n"); n != 3 {
		t.Errorf("summary.csv has %d lines, want header + 2", n)
	}
}
