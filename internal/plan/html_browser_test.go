package plan

import (
	"bytes"
	"context"
	"flag"
	"os"
	"testing"

	"github.com/llmbench/llmbench/internal/browsertest"
	"github.com/llmbench/llmbench/internal/sim"
)

var pageOut = flag.String("plan-html", "", "also write the browser test's plan.html to this file (to look at it)")

// plan.html reads well at the width a reader opens it: the chart's labels overlap nothing
// and the table of candidates fits the window.
func TestPlanHTMLInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	base, _ := sim.LoadProfile("")
	cfg := Config{Base: base, Traffic: traffic(t, 30, "poisson", 512, 128), Metrics: slos(t, "ttft:p99<=400ms,tpot:p99<=40ms"),
		MaxReplicas: 16, Workers: 2, Price: listPrice, Space: Space{GPUs: []string{"h100", "h200", "l40s"}, TPs: []int{1, 2}}}
	pl, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, pl); err != nil {
		t.Fatal(err)
	}
	if *pageOut != "" {
		if err := os.WriteFile(*pageOut, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, width := range []int{1400, 1024} {
		if l := browsertest.CheckLayout(t, bin, b.Bytes(), width); l.Texts < 10 {
			t.Errorf("at %dpx only %d chart texts were measured", width, l.Texts)
		}
	}
}
