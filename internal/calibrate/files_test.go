package calibrate

import (
	"os"
	"path/filepath"
	"testing"
)

// A calibration's files are named from its profile's, and the probe folder is in the way
// only of a probe.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	f := FilesFor(filepath.Join(dir, "m.yaml"))
	if want := filepath.Join(dir, "m.calibration.json"); f.JSON != want || f.HTML != filepath.Join(dir, "m.calibration.html") || f.Probe != filepath.Join(dir, "m.probe") {
		t.Fatalf("%+v", f)
	}
	if p, _ := f.Existing(true); p != "" {
		t.Fatalf("existing %q in an empty folder", p)
	}
	if err := os.Mkdir(f.Probe, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.Existing(false); p != "" {
		t.Errorf("a refit found %q in the way", p)
	}
	if p, probe := f.Existing(true); p != f.Probe || !probe {
		t.Errorf("a probe found %q (probe %v)", p, probe)
	}
	if err := os.WriteFile(f.HTML, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, probe := f.Existing(true); p != f.HTML || probe {
		t.Errorf("found %q (probe %v), want the report first", p, probe)
	}
}
