package sim

import "testing"

func mustProfile(t testing.TB, name string) Profile {
	t.Helper()
	p, err := LoadProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
