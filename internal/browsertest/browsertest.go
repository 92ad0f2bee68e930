// Package browsertest loads llmbench's HTML pages in headless Chromium for tests: the one
// place that starts the browser, and a check that a page reads well (no chart text drawn
// over other text, no table wider than the window).
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/testproc"
)

var keep = flag.String("keep-pages", "", "write each page the browser tests check into this folder, to look at it")

// Widths are the window widths a page must read well at: a wide window and a laptop's.
var Widths = []int{1400, 1024}

// CheckPage runs CheckLayout on page at each of Widths and fails t where fewer than
// minTexts chart texts were measured (axes without numbers, say). name is the page's file
// name under -keep-pages. It returns what it measured at each width, in Widths' order.
func CheckPage(t *testing.T, name string, page []byte, minTexts int) []Layout {
	t.Helper()
	bin := Chromium(t)
	if *keep != "" {
		if err := os.WriteFile(filepath.Join(*keep, name), page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out []Layout
	for _, width := range Widths {
		l := CheckLayout(t, bin, page, width)
		if l.Texts < minTexts {
			t.Errorf("%s at %dpx: only %d chart texts were measured, want %d or more", name, width, l.Texts, minTexts)
		}
		out = append(out, l)
	}
	return out
}

// Chromium is the browser's path; it skips t without one, unless LLMBENCH_REQUIRE_CHROMIUM
// is set (CI), where that is a failure.
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LLMBENCH_REQUIRE_CHROMIUM") != "" {
		t.Fatal("LLMBENCH_REQUIRE_CHROMIUM is set (CI) but no chromium binary is on PATH")
	}
	t.Skip("no chromium binary on PATH; the browser check of the HTML pages needs Debian's chromium")
	return ""
}

// Run runs headless Chromium on page in a width × height window with the flags of an
// offline, quiet browser, and returns its standard output.
func Run(t *testing.T, bin, page string, width, height int, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir=" + t.TempDir(), "--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height), "--virtual-time-budget=5000",
	}
	args = append(append(args, extra...), "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := testproc.Run(t, cmd); err != nil { // its own process group, killed with the test binary
		t.Fatalf("chromium %v: %v\nstderr:\n%s", extra, err, lastLines(stderr.String(), 30))
	}
	return stdout.Bytes()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var htmlTag = regexp.MustCompile(`(?s)<html\b[^>]*>`)

// HTMLTag is the <html> element's start tag in a dumped DOM.
func HTMLTag(dom []byte) []byte { return htmlTag.Find(dom) }

// HTMLAttr returns attribute name of the <html> element in a dumped DOM.
func HTMLAttr(dom []byte, name string) (string, bool) {
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindSubmatch(HTMLTag(dom))
	if m == nil {
		return "", false
	}
	return html.UnescapeString(string(m[1])), true
}

// layoutScript measures the page once its own script (if any) has drawn: every pair of
// text elements in one SVG whose boxes intersect, every SVG chart that reaches past the
// window, and every table whose visible box (its scrolling container's, when it has one)
// reaches past the window. It writes its finding
// into <html data-layout>, for --dump-dom to carry out.
const layoutScript = `<script>
setTimeout(function () {
  var out = { overlaps: [], wide: [], width: document.documentElement.clientWidth, texts: 0, charts: {} };
  document.querySelectorAll("svg").forEach(function (svg, k) {
    var name = svg.getAttribute("data-chart") || svg.getAttribute("aria-label") || ("svg " + k);
    var sr = svg.getBoundingClientRect();
    if (sr.width > 0 && (sr.right > out.width + 1 || sr.left < -1)) out.wide.push("chart " + name + " spans " + Math.round(sr.left) + ".." + Math.round(sr.right) + "px");
    var boxes = [];
    svg.querySelectorAll("text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && t.textContent.trim()) boxes.push({ t: t.textContent, r: r });
    });
    out.texts += boxes.length;
    if (boxes.length) out.charts[name] = boxes.length;
    for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i].r, b = boxes[j].r;
      var w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) out.overlaps.push(name + ": " + JSON.stringify(boxes[i].t) + " and " + JSON.stringify(boxes[j].t));
    }
  });
  document.querySelectorAll("table").forEach(function (tb, k) {
    var el = tb, p = tb.parentElement;
    for (; p && p !== document.body; p = p.parentElement) {
      var ox = getComputedStyle(p).overflowX;
      if (ox === "auto" || ox === "scroll" || ox === "hidden") { el = p; break; }
    }
    var r = el.getBoundingClientRect();
    if (r.right > out.width + 1 || r.left < -1) out.wide.push("table " + k + " spans " + Math.round(r.left) + ".." + Math.round(r.right) + "px");
  });
  if (document.documentElement.scrollWidth > out.width + 1) out.wide.push("the page is " + document.documentElement.scrollWidth + "px wide");
  document.documentElement.setAttribute("data-layout", JSON.stringify(out));
}, 1000);
</script>`

// Layout is what the layout check found on a page.
type Layout struct {
	Overlaps []string // chart text drawn over other text
	Wide     []string // tables, or the page, wider than the window
	Width    int      // the window's width in CSS pixels
	Texts    int      // text elements measured in the page's SVGs
	// Charts is the texts measured in each shown SVG, by its data-chart (else its
	// aria-label): a chart's numbered axes and labels.
	Charts map[string]int
}

// CheckLayout loads page (an HTML document) in a width × 2,400 window and fails t where a
// chart's texts overlap or a chart or table does not fit the window. It returns what it measured.
func CheckLayout(t *testing.T, bin string, page []byte, width int) Layout {
	t.Helper()
	l := measure(t, bin, page, width)
	for _, o := range l.Overlaps {
		t.Errorf("overlapping chart text at %dpx: %s", width, o)
	}
	for _, w := range l.Wide {
		t.Errorf("wider than the %dpx window: %s", width, w)
	}
	return l
}

func measure(t *testing.T, bin string, page []byte, width int) Layout {
	t.Helper()
	i := bytes.LastIndex(page, []byte("</body>"))
	if i < 0 {
		i = len(page)
	}
	probe := append(append(append([]byte{}, page[:i]...), layoutScript...), page[i:]...)
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, probe, 0o644); err != nil {
		t.Fatal(err)
	}
	dom := Run(t, bin, path, width, 2400, "--dump-dom")
	raw, ok := HTMLAttr(dom, "data-layout")
	if !ok {
		t.Fatalf("the layout check did not run; <html> tag: %s", HTMLTag(dom))
	}
	var l Layout
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		t.Fatalf("data-layout %q: %v", raw, err)
	}
	return l
}
