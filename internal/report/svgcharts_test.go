package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/browsertest"
)

// Levels whose throughputs lie far from 0 keep the x axis to their range, so that the
// points and their labels do not crowd into its right third; the labels then overlap
// nothing in the browser.
func TestTradeoffAxisFitsTheLevels(t *testing.T) {
	sum, _ := writeSynthRun(t, t.TempDir(), []int{1, 2, 4, 8, 16, 32}, 20)
	var m map[string]any
	if err := json.Unmarshal(sum, &m); err != nil {
		t.Fatal(err)
	}
	for i, l := range m["levels"].([]any) {
		l.(map[string]any)["output_throughput"] = 2000 + 200*float64(i) - 10*float64(i*i)
	}
	m["sweet_spot"] = map[string]any{"index": 3, "concurrency": 8, "reason": "knee"}
	m["slo_limit"] = map[string]any{"index": 4, "concurrency": 16, "reason": "limit"}
	sum, _ = json.Marshal(m)
	s, err := ReadJSON(bytes.NewReader(sum))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(tradeoffChart(s, "tradeoff-ttft", "ttft", "TTFT"))
	ticks := regexp.MustCompile(`text-anchor="middle" fill="#4a5361">([^<]*)<`).FindAllStringSubmatch(svg, -1)
	if len(ticks) < 3 || ticks[0][1] == "0" || strings.Contains(svg, "e+") {
		t.Errorf("x ticks %v: want the levels' range (about 2,000 to 3,000), numbers without exponents", ticks)
	}
	for _, want := range []string{"sweet spot", "SLO limit", ">c=8<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, s, nil); err != nil {
		t.Fatal(err)
	}
	browsertest.CheckPage(t, "report-tradeoff.html", b.Bytes(), 20)
}
