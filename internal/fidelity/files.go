package fidelity

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/report"
)

// Input names which of the join's two inputs a FileError is about.
type Input int

const (
	// Records is the run's results folder or its records file.
	Records Input = iota
	// TruthFile is the ground truth the simulator's server wrote.
	TruthFile
)

// Problem says what went wrong with an input.
type Problem int

const (
	// Missing: the input could not be opened.
	Missing Problem = iota
	// NoStart: the run's start instant was not given and its summary.json is not there.
	NoStart
	// Unreadable: the input was opened but could not be read.
	Unreadable
)

// FileError is a problem with one input of FromFiles; Path is the file read.
type FileError struct {
	Input   Input
	Problem Problem
	Path    string
	Err     error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// FromFiles joins the records at records (a run's results folder, or its records file) to
// the truth file: the truth is read into memory and the records streamed through the join.
// A zero start is the run's own, from summary.json beside the records.
func FromFiles(records, truthPath string, start time.Time, opts Options) (Report, error) {
	bad := func(in Input, p Problem, path string, err error) (Report, error) {
		return Report{}, &FileError{Input: in, Problem: p, Path: path, Err: err}
	}
	path, dir := records, records
	var findErr error // said after summary.json's, the folder's first file
	if st, err := os.Stat(records); err != nil {
		return bad(Records, Missing, records, err)
	} else if st.IsDir() {
		path, findErr = record.Find(records)
	} else {
		dir = filepath.Dir(records)
	}
	if start.IsZero() {
		s, err := report.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return bad(Records, NoStart, dir, err)
		} else if err != nil {
			return bad(Records, Unreadable, dir, err)
		}
		start = s.StartedAt
	}
	if findErr != nil {
		return bad(Records, Unreadable, records, findErr)
	}
	tf, err := os.Open(truthPath)
	if err != nil {
		return bad(TruthFile, Missing, truthPath, err)
	}
	truth, err := ReadTruth(tf)
	tf.Close()
	if err != nil {
		return bad(TruthFile, Unreadable, truthPath, err)
	}
	j := NewJoin(truth, start, opts)
	err = record.EachInFile(path, func(r *record.Record) error { j.Add(r); return nil })
	if err != nil && !errors.Is(err, record.ErrTruncated) { // a last line a killed writer cut short is left out
		return bad(Records, Unreadable, path, err)
	}
	return j.Report(), nil
}
