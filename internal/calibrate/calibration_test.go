package calibrate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
)

// A calibration states every problem at once, each of its fields: what it fits and where
// its profile goes (Files), then the fit's model and the probe's bounds (Options).
func TestCalibrationProblems(t *testing.T) {
	probe := func(c Calibration) Calibration { c.URL = "http://127.0.0.1:1"; return c }
	for _, tc := range []struct {
		c    Calibration
		want []string
	}{
		{Calibration{Profile: "f.yaml", Dirs: []string{"d"}}, nil},
		{probe(Calibration{Profile: "f.yml", ModelShape: "llama-3.1-8b", GPU: "h100", MaxNumSeqs: 2}), nil},
		{Calibration{}, []string{"URL,Dirs", "Profile"}},
		{probe(Calibration{Profile: "f.json", Dirs: []string{"d"}}), []string{"URL,Dirs", "Profile"}},
		{Calibration{Profile: "f.yaml", Dirs: []string{"d"}, ModelShape: "llama-3.1-8b"}, []string{"ModelShape,ModelConfig,GPU"}},
		{Calibration{Profile: "f.yaml", Dirs: []string{"d"}, GPU: "h100"}, []string{"ModelShape,ModelConfig,GPU"}},
		{Calibration{Profile: "f.yaml", Dirs: []string{"d"}, ModelShape: "gpt-9", ModelConfig: "missing.json", GPU: "tpu"},
			[]string{"ModelShape,ModelConfig", "ModelShape", "ModelConfig", "GPU"}},
		{probe(Calibration{ProbeRun: ProbeRun{MaxConcurrency: -1, MaxInputTokens: 10}, Profile: "f.yaml", MaxNumSeqs: -2}),
			[]string{"MaxConcurrency", "MaxInputTokens", "MaxNumSeqs"}},
	} {
		files, err := tc.c.Files()
		_, optsErr := tc.c.Options()
		if got := append(fielderr.Fields(err), fielderr.Fields(optsErr)...); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: problems of %q, want %q (%v, %v)", tc.c, got, tc.want, err, optsErr)
		}
		if files != FilesFor(tc.c.Profile) {
			t.Errorf("%+v: files %+v", tc.c, files)
		}
	}
	_, err := Calibration{Dirs: []string{"d"}, ProbeRun: ProbeRun{URL: "u"}}.Files()
	if !errors.Is(err, ErrTwoSources) {
		t.Errorf("a server and run folders: %v", err)
	}
	if _, err := (Calibration{}).Files(); !errors.Is(err, ErrNoSource) {
		t.Errorf("nothing to fit: %v", err)
	}
}

// A roofline fit's options carry its model and GPU; a linear one's neither, and its seed
// is never 0.
func TestCalibrationOptionsModel(t *testing.T) {
	opts, err := Calibration{Profile: "f.yaml", Dirs: []string{"d"}, ModelShape: "llama-3.1-8b", GPU: "h100", MaxNumSeqs: 4}.Options()
	if err != nil || opts.Model == nil || opts.GPU == nil || opts.GPU.Name != "h100" || opts.MaxNumSeqs != 4 || opts.Seed != 1 {
		t.Errorf("roofline: %+v, %v", opts, err)
	}
	opts, err = Calibration{ProbeRun: ProbeRun{Seed: 7}, Profile: "f.yaml", Dirs: []string{"d"}}.Options()
	if err != nil || opts.Model != nil || opts.GPU != nil || opts.Seed != 7 {
		t.Errorf("linear: %+v, %v", opts, err)
	}
}

// A calibration's files in the way are refused unless it overwrites them; an earlier
// probe's folder is in the way of a probe only.
func TestCalibrationInTheWay(t *testing.T) {
	dir := t.TempDir()
	c := Calibration{Profile: filepath.Join(dir, "m.yaml")}
	if err := c.InTheWay(); err != nil {
		t.Errorf("nothing there: %v", err)
	}
	if err := os.Mkdir(FilesFor(c.Profile).Probe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.InTheWay(); err != nil {
		t.Errorf("a refit: %v", err)
	}
	probe := c
	probe.URL = "http://127.0.0.1:1"
	var exists *ExistsError
	if err := probe.InTheWay(); !errors.As(err, &exists) || *exists != (ExistsError{Path: FilesFor(c.Profile).Probe, Probe: true}) {
		t.Errorf("a probe: %v", err)
	}
	if err := os.WriteFile(c.Profile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.InTheWay(); !errors.As(err, &exists) || *exists != (ExistsError{Path: c.Profile}) {
		t.Errorf("a refit with the profile there: %v", err)
	}
	c.Overwrite = true
	if err := c.InTheWay(); err != nil {
		t.Errorf("overwriting: %v", err)
	}
}
