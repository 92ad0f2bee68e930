package bench

import (
	"errors"
	"slices"
	"testing"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/search"
)

// TestConfigValidate: every problem at once, each a *fielderr.Error keyed by its field (the
// CLI names it by the flag that sets it).
func TestConfigValidate(t *testing.T) {
	verdict, err := metrics.ParseSLOs("ttft:p99<=1s")
	if err != nil {
		t.Fatal(err)
	}
	good := testConfig(t)
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		edit func(*Config)
		want []string
	}{
		{func(c *Config) { c.Output.Dir, c.Output.Records, c.Output.ResultFormat = "", "csv", "csv" },
			[]string{"Output.Dir", "Output.Records", "Output.ResultFormat"}},
		{func(c *Config) { c.Repeat, c.Console.Out = 0, nil }, []string{"Repeat", "Console.Out"}},
		{func(c *Config) { c.Search = "tokens" }, []string{"Search"}},
		{func(c *Config) { c.Search, c.Judge.Metrics.SLOs, c.Levels = search.Rate, verdict, nil }, []string{"SearchMax"}}, // a search needs its bound
		{func(c *Config) { c.SearchMax = -5 }, []string{"SearchMax"}},                                                     // ignored without a search, but must read
		{func(c *Config) {
			c.Search, c.SearchMax, c.Judge.Metrics.SLOs, c.Levels = search.Concurrency, 64, verdict, nil
		}, nil}, // fine
		{func(c *Config) { c.Search, c.SearchMax, c.Levels = search.Concurrency, 64, nil }, []string{"Search,Judge.Metrics.SLOs"}},     // nothing to decide on
		{func(c *Config) { c.Search, c.SearchMax, c.Judge.Metrics.SLOs = search.Concurrency, 64, verdict }, []string{"Search,Levels"}}, // it finds the load
	} {
		cfg := testConfig(t)
		c.edit(&cfg)
		var got []string
		if err := cfg.Validate(); err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *fielderr.Error
				if !errors.As(e, &fe) {
					t.Fatalf("%v is not a *fielderr.Error", e)
				}
				got = append(got, fe.Field)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("fields %v, want %v", got, c.want)
		}
	}
}
