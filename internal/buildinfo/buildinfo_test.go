package buildinfo

import (
	"runtime/debug"
	"testing"
)

// A release names its module version; a build from a checkout its revision, marked when
// the tree was modified; a build with neither is "dev".
func TestVersion(t *testing.T) {
	rev := func(r, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: r}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: rev("0123456789abcdef", "true")}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev("0123456789abcdef", "false")}, "dev+0123456789ab"},
		{debug.BuildInfo{Settings: rev("0123456789abcdef", "true")}, "dev+0123456789ab-dirty"},
		{debug.BuildInfo{Settings: rev("abc", "false")}, "dev+abc"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := version(&c.bi); got != c.want {
			t.Errorf("%+v: %q, want %q", c.bi, got, c.want)
		}
	}
}
