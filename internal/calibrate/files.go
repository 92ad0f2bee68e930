package calibrate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/internal/atomicfile"
)

// Files are the files a calibration writes, named from its profile's path (FILE.yaml).
type Files struct {
	Profile, JSON, HTML string
	// Probe is the folder a probe writes its steps' run folders under.
	Probe string
}

// FilesFor names a calibration's files from its profile's path.
func FilesFor(profile string) Files {
	base := strings.TrimSuffix(profile, filepath.Ext(profile))
	return Files{Profile: profile, JSON: base + ".calibration.json", HTML: base + ".calibration.html", Probe: base + ".probe"}
}

// Existing is the first of f's files that exists already, the probe folder counting only
// when probing; "" when none does.
func (f Files) Existing(probing bool) (path string, isProbe bool) {
	for _, p := range []string{f.Profile, f.JSON, f.HTML} {
		if _, err := os.Stat(p); err == nil {
			return p, false
		}
	}
	if _, err := os.Stat(f.Probe); err == nil && probing {
		return f.Probe, true
	}
	return "", false
}

// Write writes r's profile (under header), its calibration.json (naming llmbench version)
// and its calibration.html, each whole or not at all, reporting every failure.
func (f Files) Write(r *Result, header, version string) error {
	return errors.Join(
		atomicfile.Write(f.Profile, func(w io.Writer) error { _, err := w.Write(r.Profile.YAML(header)); return err }),
		atomicfile.Write(f.JSON, func(w io.Writer) error { return r.WriteJSON(w, version, f.Profile) }),
		atomicfile.Write(f.HTML, func(w io.Writer) error { return r.WriteHTML(w, "llmbench calibration: "+filepath.Base(f.Profile)) }),
	)
}
