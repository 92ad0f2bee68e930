package browsertest

import (
	"strings"
	"testing"
)

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

// A chart wider than the window is found, and each chart's texts are counted by its name.
func TestCheckLayoutFindsWideCharts(t *testing.T) {
	bin := Chromium(t)
	page := []byte(`<!DOCTYPE html><html><body style="margin:0">
<svg data-chart="fits" width="300" height="100"><text x="10" y="50">0</text><text x="200" y="50">10</text></svg>
<svg data-chart="wide" width="600" height="100"><text x="10" y="50">time (s)</text></svg>
</body></html>`)
	l := measure(t, bin, page, 400)
	if len(l.Wide) != 2 || !strings.Contains(l.Wide[0], "chart wide spans") || l.Charts["fits"] != 2 || l.Charts["wide"] != 1 {
		t.Errorf("measured %+v; want the wide chart (and so the page) past the window, and 2 and 1 texts", l)
	}
}
