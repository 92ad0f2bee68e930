package metrics

import (
	"os"
	"testing"

	"github.com/llmbench/llmbench/internal/testtier"
)

// The tests run at testtier.GCPercent: many short simulations on a small heap.
func TestMain(m *testing.M) { os.Exit(testtier.Main(m)) }
