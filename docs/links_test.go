// Package docs holds no code: its test checks that every relative link and #anchor in
// README.md and docs/*.md resolves, so that moving a section cannot leave a dead link.
package docs

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlTag  = regexp.MustCompile(`<[^>]+>`)
	named    = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	link     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	code     = regexp.MustCompile("`[^`\n]*`")
	scheme   = regexp.MustCompile(`(?i)^[a-z][a-z0-9+.-]*:`)
)

// prose is a Markdown file's text with its fenced code blocks and inline code blanked out
// (line numbers kept), where links are not links.
func prose(t *testing.T, path string) []string {
	lines := unfenced(t, path)
	for i, l := range lines {
		lines[i] = code.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) })
	}
	return lines
}

// unfenced is a Markdown file's lines with its fenced code blocks blanked out.
func unfenced(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			fenced, lines[i] = !fenced, ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// anchors are a file's heading slugs as GitHub makes them (lower case, punctuation dropped,
// spaces to hyphens, repeats numbered -1, -2, ...) and its <a name> anchors.
func anchors(t *testing.T, path string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	for _, l := range unfenced(t, path) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := htmlTag.ReplaceAllString(linkText.ReplaceAllString(m[2], "$1"), "")
		s = strings.Map(func(r rune) rune {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
				return unicode.ToLower(r)
			case r == ' ':
				return '-'
			}
			return -1
		}, strings.TrimSpace(s))
		n := seen[s]
		seen[s]++
		if n > 0 {
			s += "-" + strconv.Itoa(n)
		}
		out[s] = true
	}
	b, _ := os.ReadFile(path)
	for _, m := range named.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

func TestRelativeLinksResolve(t *testing.T) {
	files, _ := filepath.Glob("*.md")
	files = append([]string{"../README.md"}, files...)
	cache := map[string]map[string]bool{}
	checked := 0
	for _, f := range files {
		for i, l := range prose(t, f) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if scheme.MatchString(target) {
					continue
				}
				checked++
				p, anchor, _ := strings.Cut(target, "#")
				dest := f
				if p != "" {
					u, err := url.PathUnescape(p)
					if err != nil {
						u = p
					}
					dest = filepath.Join(filepath.Dir(f), u)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: %s: no such file", f, i+1, target)
					continue
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if cache[dest] == nil {
					cache[dest] = anchors(t, dest)
				}
				if !cache[dest][strings.ToLower(anchor)] {
					t.Errorf("%s:%d: %s: no such heading", f, i+1, target)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d relative links found: the parser missed them", checked)
	}
}
