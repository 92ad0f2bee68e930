// Package buildinfo says which code a binary was built from, so that every summary.json
// names the code that produced it.
package buildinfo

import "runtime/debug"

// Version is the module version Go stamped into the binary, or else "dev+" and the VCS
// revision (12 hex digits, "-dirty" for a modified tree); "dev" when neither is known.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return version(bi)
}

func version(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev+" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	return v
}
