// Package cputime reads the CPU time this process has used, for benchmarks that report
// work per CPU-second rather than per wall-clock second (on a shared machine the two differ).
package cputime

import "time"

// Process is the user plus system CPU time the process has used so far; ok is false where
// the system does not say.
func Process() (d time.Duration, ok bool) { return process() }
