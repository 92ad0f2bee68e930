package calibrate

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
)

// Calibration is a calibration as asked for: a server to probe (ProbeRun, its URL set) or run
// folders to fit, the profile to write, and what the fit is of.
type Calibration struct {
	ProbeRun
	Dirs    []string // run folders to fit, instead of probing
	Profile string   // the profile to write, FILE.yaml (FilesFor names the rest)
	// ModelShape (a preset) or ModelConfig (a config.json), with GPU (a preset), make the
	// fit a roofline's (Options.Model, Options.GPU).
	ModelShape, ModelConfig, GPU string
	MaxNumSeqs                   int // Options.MaxNumSeqs
}

// A calibration's sources, its URL and Dirs, wrong together (a *fielderr.Error of
// "URL,Dirs" wraps each).
var (
	ErrNoSource   = errors.New("a server to probe or run folders to fit is needed")
	ErrTwoSources = errors.New("a server to probe and run folders to fit exclude each other")
)

// Files are the files c writes (FilesFor), with every problem with what c fits and where
// its profile goes, each a *fielderr.Error of c's field.
func (c Calibration) Files() (Files, error) {
	var errs []error
	switch {
	case c.URL == "" && len(c.Dirs) == 0:
		errs = append(errs, &fielderr.Error{Field: "URL,Dirs", Err: ErrNoSource})
	case c.URL != "" && len(c.Dirs) > 0:
		errs = append(errs, &fielderr.Error{Field: "URL,Dirs", Err: ErrTwoSources})
	}
	if c.Profile == "" {
		errs = append(errs, fielderr.New("Profile", "FILE.yaml is required"))
	} else if ext := filepath.Ext(c.Profile); ext != ".yaml" && ext != ".yml" {
		errs = append(errs, fielderr.New("Profile", "%s: name a .yaml file (the profile)", c.Profile))
	}
	return FilesFor(c.Profile), errors.Join(errs...)
}

// ExistsError is a file of a calibration's that exists already, which it would replace.
type ExistsError struct {
	Path  string
	Probe bool // Path is the probe folder: an earlier probe's, which c could fit instead
}

func (e *ExistsError) Error() string { return e.Path + " exists" }

// InTheWay is the first of c's files that exists already (Files.Existing: the probe folder
// only when c probes), as an *ExistsError; nil when none does, or c overwrites them.
func (c Calibration) InTheWay() error {
	if p, isProbe := FilesFor(c.Profile).Existing(c.URL != ""); p != "" && !c.Overwrite {
		return &ExistsError{Path: p, Probe: isProbe}
	}
	return nil
}

// Options are the fit's options c asks for, with every problem with them, each a
// *fielderr.Error of c's field (several joined by commas where they are wrong together).
func (c Calibration) Options() (Options, error) {
	opts := Options{MaxNumSeqs: c.MaxNumSeqs, Seed: max(c.Seed, 1)}
	var err error
	opts.Model, opts.GPU, err = c.roofline()
	errs := fielderr.Split(err)
	errs = append(errs, fielderr.Split(ProbeConfig{MaxConcurrency: c.MaxConcurrency, MaxInputTokens: c.MaxInputTokens}.Validate())...)
	if c.MaxNumSeqs < 0 {
		errs = append(errs, fielderr.New("MaxNumSeqs", "%d: must be positive", c.MaxNumSeqs))
	}
	return opts, errors.Join(errs...)
}

// roofline is the model and GPU of a roofline fit, both nil for a linear one.
func (c Calibration) roofline() (*sim.ModelShape, *sim.GPU, error) {
	var errs []error
	switch {
	case c.ModelShape != "" && c.ModelConfig != "":
		errs = append(errs, fielderr.New("ModelShape,ModelConfig", "give one (a preset, or a config.json)"))
	case (c.ModelShape == "" && c.ModelConfig == "") != (c.GPU == ""):
		errs = append(errs, fielderr.New("ModelShape,ModelConfig,GPU", "a roofline fit needs the model and the GPU"))
	}
	m, ok := sim.ModelPreset(c.ModelShape)
	if c.ModelShape != "" && !ok {
		errs = append(errs, fielderr.New("ModelShape", "%q: not a preset (presets: %s)", c.ModelShape, strings.Join(sim.ModelPresets(), ", ")))
	}
	if c.ModelConfig != "" {
		var err error
		if m, err = sim.LoadHFConfig(c.ModelConfig); err != nil {
			errs = append(errs, &fielderr.Error{Field: "ModelConfig", Err: err})
		}
	}
	g, ok := sim.GPUPreset(c.GPU)
	if c.GPU != "" && !ok {
		errs = append(errs, fielderr.New("GPU", "%q: not a preset (presets: %s)", c.GPU, strings.Join(sim.GPUPresets(), ", ")))
	}
	if c.ModelShape == "" && c.ModelConfig == "" {
		return nil, nil, errors.Join(errs...)
	}
	return &m, &g, errors.Join(errs...)
}
