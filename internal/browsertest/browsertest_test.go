package browsertest

import "testing"

// The layout check finds what it is for: text over text, and a table past the window.
func TestCheckLayoutFindsOverlapsAndWideTables(t *testing.T) {
	bin := Chromium(t)
	page := []byte(`<!DOCTYPE html><html><body>
<svg width="300" height="100"><text x="10" y="50">sweet spot</text><text x="20" y="52">SLO limit</text><text x="200" y="50">apart</text></svg>
<table><tr><td style="white-space:nowrap">aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa</td></tr></table>
</body></html>`)
	l := measure(t, bin, page, 400)
	if len(l.Overlaps) != 1 || len(l.Wide) == 0 || l.Texts != 3 {
		t.Errorf("measured %+v; want one overlap, a wide table, three texts", l)
	}
}
