package record

import (
	"io"
	"os"
	"path/filepath"

	"github.com/llmbench/llmbench/internal/atomicfile"
)

// OccupiedError says a folder holds another run's records file of the same name.
type OccupiedError struct {
	Dir, Name string
}

func (e *OccupiedError) Error() string {
	return e.Dir + " already holds another run's records (" + e.Name + ")"
}

// CopyInto puts the records of the run in dir (Find) into outDir, so that outDir holds a
// whole run to read again: hard-linked where it can be, else copied atomically. Records
// already there (outDir is dir, or an earlier CopyInto linked them) are left as they are;
// another run's are an *OccupiedError.
func CopyInto(dir, outDir string) error {
	src, err := Find(dir)
	if err != nil {
		return err
	}
	dst := filepath.Join(outDir, filepath.Base(src))
	if a, b := absPath(src), absPath(dst); a == b {
		return nil
	}
	if st, err := os.Stat(dst); err == nil {
		if sst, err := os.Stat(src); err == nil && os.SameFile(st, sst) {
			return nil
		}
		return &OccupiedError{Dir: outDir, Name: filepath.Base(dst)}
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.Write(dst, func(w io.Writer) error { _, err := io.Copy(w, in); return err })
}

// absPath is p made absolute, or p when it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
