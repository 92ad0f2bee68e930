package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/browsertest"
)

var (
	screenshotOut = flag.String("report-screenshot", "", "save the browser test's full-page screenshot to this PNG file (e.g. ../../docs/report-screenshot.png)")
	reportDir     = flag.String("report-dir", "", "render this results folder (summary.json + records.jsonl) in the browser test instead of a synthetic run")
)

const browserWidth = 1280

type chartRect struct {
	Name       string
	X, Y, W, H int
}

func TestReportHTMLInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	dir := t.TempDir()
	synthetic := *reportDir == ""
	var sum []byte
	var recordsPath string
	if synthetic {
		sum, recordsPath = writeSynthRun(t, dir, []int{1, 4, 16, 64}, 120)
		// Server metrics over time, as issue 6 will put them in summary.json.
		sum = withServerSeries(t, sum)
	} else {
		var err error
		if sum, err = os.ReadFile(filepath.Join(*reportDir, "summary.json")); err != nil {
			t.Fatal(err)
		}
		recordsPath = filepath.Join(*reportDir, "records.jsonl")
	}
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := writeHTMLRecords(&b, sum, recordsPath); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// No chart text over other text and no chart or table past the window.
	layouts := browsertest.CheckPage(t, "report.html", b.Bytes(), 20)
	// The request anatomy and the charts over time have numbered, labelled axes: at least
	// three ticks on each and both titles, measured in the 1,400px window.
	timeCharts := []string{"overtime-tokens", "overtime-requests"}
	if synthetic {
		timeCharts = append(timeCharts, "server-requests", "server-kv")
	}
	for _, l := range layouts {
		anatomy := ""
		for name := range l.Charts {
			if strings.HasPrefix(name, "anatomy-") {
				anatomy = name
			}
		}
		for _, name := range append(timeCharts, anatomy) {
			if n := l.Charts[name]; n < 8 {
				t.Errorf("at %dpx chart %q shows %d texts, want its axes' numbers and titles (8 or more); measured: %v", l.Width, name, n, l.Charts)
			}
		}
	}

	dom := browsertest.Run(t, bin, page, browserWidth, 2000, "--dump-dom")
	if errs, ok := browsertest.HTMLAttr(dom, "data-errors"); ok {
		t.Fatalf("the page reported script errors: %s", errs)
	}
	if v, _ := browsertest.HTMLAttr(dom, "data-ready"); v != "1" {
		t.Fatalf("the page's script did not finish (no data-ready); <html> tag: %s", browsertest.HTMLTag(dom))
	}
	raw, _ := browsertest.HTMLAttr(dom, "data-charts")
	var rects []chartRect
	if err := json.Unmarshal([]byte(raw), &rects); err != nil {
		t.Fatalf("data-charts %q: %v", raw, err)
	}
	drawn := map[string]chartRect{}
	for _, r := range rects {
		drawn[r.Name] = r
	}
	want := []string{"tradeoff-ttft", "tradeoff-tpot", "percentiles", "cdf-ttft_ms", "cdf-tpot_ms", "cdf-itl_ms", "anatomy", "overtime"}
	if synthetic {
		want = append(want, "server")
	}
	for _, want := range want {
		if _, ok := drawn[want]; !ok {
			t.Errorf("chart %q was not drawn; drawn: %v", want, rects)
		}
	}
	// The server-rendered parts and the data are in the DOM too.
	for _, want := range []string{"sweet spot", "SLO limit", "concurrency 64", "textbook-sim", "http_status"} {
		if synthetic && !bytes.Contains(dom, []byte(want)) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	checkAnatomyHover(t, bin, b.Bytes())
	hs, _ := browsertest.HTMLAttr(dom, "data-height")
	height, err := strconv.Atoi(hs)
	if err != nil || height < 1000 || height > 20000 {
		t.Fatalf("page height %q", hs)
	}

	// A window as tall as the page puts every chart in the screenshot.
	shot := filepath.Join(dir, "shot.png")
	browsertest.Run(t, bin, page, browserWidth, height, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	for _, r := range rects {
		area := image.Rect(r.X, r.Y, r.X+r.W, r.Y+r.H).Intersect(img.Bounds())
		if r.W < 100 || r.H < 100 {
			t.Errorf("chart %s has no real size: %+v", r.Name, r)
			continue
		}
		if area.Dx()*area.Dy() < r.W*r.H/2 {
			t.Errorf("chart %s at %v is mostly outside the %v screenshot", r.Name, area, img.Bounds())
			continue
		}
		ink, colours, vivid := inkAndColours(img, area)
		t.Logf("chart %-14s %4dx%-4d ink %5.1f%%  %4d colours  %5d vivid pixels", r.Name, r.W, r.H, 100*ink, colours, vivid)
		// Axes, grid and text are grey; only drawn data is saturated colour.
		if ink < 0.01 || colours < 6 || vivid < 150 {
			t.Errorf("chart %s looks blank: %.2f%% non-white pixels, %d distinct colours, %d vivid pixels", r.Name, 100*ink, colours, vivid)
		}
	}
	if *screenshotOut != "" {
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshotOut, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hoverProbe points at the middle of the request anatomy shown, then picks the first level.
const hoverProbe = `<script>
setTimeout(function () {
  var svg = document.querySelector("#anatomy [data-anatomy]:not([hidden]) svg"), r = svg.getBoundingClientRect();
  document.querySelector('figure[data-chart="anatomy"] .plot').dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true }));
  var h = document.documentElement;
  h.setAttribute("data-hover", document.getElementById("anatomy-hover").textContent);
  var sel = document.getElementById("anatomy-level");
  sel.value = sel.options[0].value;
  sel.dispatchEvent(new Event("change"));
  h.setAttribute("data-shown", [].filter.call(document.querySelectorAll("#anatomy [data-anatomy]"), function (d) { return !d.hidden; }).map(function (d) { return d.getAttribute("data-anatomy"); }).join(","));
  h.setAttribute("data-title", document.getElementById("anatomy-title").textContent);
}, 300);
</script>`

// checkAnatomyHover checks that the pointer over the request anatomy names the request
// under it, from the page's sample, and that the level selector shows one level's chart.
func checkAnatomyHover(t *testing.T, bin string, page []byte) {
	t.Helper()
	i := bytes.LastIndex(page, []byte("</body>"))
	probe := append(append(append([]byte{}, page[:i]...), hoverProbe...), page[i:]...)
	path := filepath.Join(t.TempDir(), "hover.html")
	if err := os.WriteFile(path, probe, 0o644); err != nil {
		t.Fatal(err)
	}
	dom := browsertest.Run(t, bin, path, 1400, 2400, "--dump-dom")
	if errs, ok := browsertest.HTMLAttr(dom, "data-errors"); ok {
		t.Fatalf("script errors: %s", errs)
	}
	hover, _ := browsertest.HTMLAttr(dom, "data-hover")
	if !regexp.MustCompile(`^request \d+ · sent at [\d.]+ s · .*TTFT [\d.]+ ms`).MatchString(hover) {
		t.Errorf("the pointer over the anatomy reads %q, want the request's timings", hover)
	}
	shown, _ := browsertest.HTMLAttr(dom, "data-shown")
	title, _ := browsertest.HTMLAttr(dom, "data-title")
	if shown != "0" || !strings.HasSuffix(title, ": concurrency 1") {
		t.Errorf("after choosing the first level: charts %q shown, title %q; want level 0's alone", shown, title)
	}
}

// inkAndColours returns the fraction of non-white pixels in r, the number of distinct colours,
// and the number of vivid pixels (saturated colour, as series draw and grey chrome does not).
func inkAndColours(img image.Image, r image.Rectangle) (float64, int, int) {
	colours := map[uint32]bool{}
	ink, vivid := 0, 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			r8, g8, b8 := cr>>8, cg>>8, cb>>8
			colours[r8<<16|g8<<8|b8] = true
			if r8 < 245 || g8 < 245 || b8 < 245 {
				ink++
			}
			if max(r8, g8, b8)-min(r8, g8, b8) > 60 {
				vivid++
			}
		}
	}
	return float64(ink) / float64(r.Dx()*r.Dy()), len(colours), vivid
}

// withServerSeries adds per-level server metrics (columnar) to a summary, as issue 6 plans.
func withServerSeries(t *testing.T, sum []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(sum, &m); err != nil {
		t.Fatal(err)
	}
	levels := m["levels"].([]any)
	tcur := 0.0
	for i, l := range levels {
		lm := l.(map[string]any)
		d := lm["duration_s"].(float64)
		c := lm["concurrency"].(float64)
		var ts, running, waiting, kv []float64
		for s := 0.0; s < d; s += 0.5 {
			ts = append(ts, tcur+s)
			running = append(running, min(c, 32))
			waiting = append(waiting, max(0, c-32))
			kv = append(kv, min(0.95, c/70+0.02*float64(i)))
		}
		tcur += d + 0.5
		lm["server"] = map[string]any{"series": map[string]any{"t_s": ts, "running": running, "waiting": waiting, "kv_cache_usage": kv}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestChromiumHelpers(t *testing.T) {
	dom := []byte(`<html lang="en" data-ready="1" data-charts="[{&quot;name&quot;:&quot;a&quot;}]"><head>`)
	if v, ok := browsertest.HTMLAttr(dom, "data-charts"); !ok || v != `[{"name":"a"}]` {
		t.Fatalf("htmlAttr = %q, %v", v, ok)
	}
	if _, ok := browsertest.HTMLAttr(dom, "data-errors"); ok {
		t.Fatal("found an absent attribute")
	}
	img := image.NewRGBA(image.Rect(0, 0, 10, 10))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	if ink, n, v := inkAndColours(img, img.Bounds()); ink != 0 || n != 1 || v != 0 {
		t.Fatalf("white image: ink %v, colours %d, vivid %d", ink, n, v)
	}
	img.Pix[0] = 0                                     // red channel of pixel 0: cyan, vivid
	img.Pix[4], img.Pix[5], img.Pix[6] = 100, 100, 100 // grey
	if ink, n, v := inkAndColours(img, img.Bounds()); ink != 0.02 || n != 3 || v != 1 {
		t.Fatalf("a cyan and a grey pixel: ink %v, colours %d, vivid %d", ink, n, v)
	}
}
