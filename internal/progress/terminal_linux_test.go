package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmbench/llmbench/internal/console"
	"github.com/llmbench/llmbench/internal/ptytest"
)

// TestNoProgressOffATerminal: a file or pipe gets no progress line (logs and CI stay clean),
// and a terminal behind the console's note folding still gets one.
func TestNoProgressOffATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if terminal(console.FoldNotes{W: f}) || terminal(console.FoldNotes{W: &bytes.Buffer{}}) {
		t.Fatal("a file or buffer behind the note folding was taken for a terminal")
	}
	_, tty := ptytest.Open(t)
	if !terminal(console.FoldNotes{W: tty}) {
		t.Fatal("a terminal behind the note folding was not seen as one")
	}
}
