package workload

import (
	"strings"
	"testing"
	"time"
)

// TestDatasetBounds: arrivals beyond MaxTraceSpan (which used to overflow time.Duration
// into negative arrivals), token counts beyond MaxTokens and malformed CSV (which used to
// panic in csv.Reader.FieldPos) are errors naming the file, the line and the allowed range.
func TestDatasetBounds(t *testing.T) {
	const azureHead = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	cases := []struct {
		kind, content string
		speed         float64
		want          string // "" = accepted
	}{
		{DatasetJSONL, `{"prompt": "a", "arrival_s": 1e300}`, 0, "data:1: arrival_s 1e+300 must be an offset in 0..315576000 s (10 years)"},
		{DatasetJSONL, `{"prompt": "a", "arrival_s": 315576000}`, 0, ""},
		{DatasetJSONL, `{"prompt": "a", "arrival_s": 315576001}`, 0, "data:1: arrival_s"},
		{DatasetJSONL, `{"prompt": "a", "input_tokens": 10000001}`, 0, "data:1: input_tokens 10000001 must be in 1..10000000"},
		{DatasetJSONL, `{"prompt": "a", "output_tokens": 10000001}`, 0, "data:1: output_tokens 10000001 must be in 1..10000000"},
		{DatasetJSONL, `{"prompt": "a", "prefix_tokens": 10000001}`, 0, "data:1: prefix_tokens 10000001 must be in 0..10000000"},
		// Mooncake: the span is measured from the first row, so the row that stretches it fails.
		{DatasetMooncake, "{\"timestamp\": 1e300, \"input_length\": 5, \"output_length\": 2}\n{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n", 0,
			"data:2: timestamp 0 ms stretches the trace beyond 10 years"},
		{DatasetMooncake, "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2}\n{\"timestamp\": 1e300, \"input_length\": 5, \"output_length\": 2}\n", 0,
			"data:2: timestamp 1e+300 ms stretches the trace beyond 10 years"},
		// Unix-epoch milliseconds are fine: only the spread matters.
		{DatasetMooncake, "{\"timestamp\": 1700000000000, \"input_length\": 5, \"output_length\": 2}\n{\"timestamp\": 1700000001000, \"input_length\": 5, \"output_length\": 2}\n", 0, ""},
		{DatasetMooncake, `{"timestamp": 0, "input_length": 5, "output_length": 10000001}`, 0, "data:1: output_length 10000001 must be in 0..10000000"},
		{DatasetAzure, azureHead + "1e300,5,3\n0,4,2\n", 0, `data:2: TIMESTAMP "1e300" is neither a date-time`},
		{DatasetAzure, azureHead + "2023-11-16 18:15:46,5,3\n1900-01-01 00:00:00,4,2\n", 0, `data:3: TIMESTAMP "1900-01-01 00:00:00" stretches the trace beyond 10 years`},
		{DatasetAzure, azureHead + "2023-11-16 18:15:46,5,3\n9999-12-31 23:59:59,4,2\n", 0, `data:3: TIMESTAMP "9999-12-31 23:59:59" stretches`},
		{DatasetAzure, azureHead + "2023-11-16 18:15:46,5,3\n2030-01-01 00:00:00,4,2\n", 0, ""},
		// A slowed-down replay must fit too.
		{DatasetAzure, azureHead + "2023-11-16 18:15:46,5,3\n2030-01-01 00:00:00,4,2\n", 0.5, "data: the trace spans 53693h44m14s; at trace speed 0.5 its replay would last over 10 years"},
		{DatasetAzure, azureHead + "0,10000001,3\n", 0, "data:2: ContextTokens \"10000001\" and GeneratedTokens \"3\" must be whole numbers in 0..10000000"},
		{DatasetAzure, azureHead + "0000\"0000\n", 0, "data:2:5: bare \" in non-quoted-field"},
		{DatasetAzure, azureHead + "0,5,3\n1,\"5,3\n", 0, "data:3:"},
	}
	for _, c := range cases {
		path := writeFile(t, "data", c.content)
		src, err := New(Config{Dataset: c.kind + ":" + path, OutputTokens: Fixed(3), LengthsOnly: true, TraceSpeed: c.speed}, byteTok{})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s %q: %v", c.kind, c.content, err)
				continue
			}
			for i := range src.Len() {
				if a := src.Request(0, i).Arrival; a < 0 || a > MaxTraceSpan {
					t.Errorf("%s %q: request %d arrives at %v", c.kind, c.content, i, a)
				}
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want one containing %q", c.kind, c.content, err, c.want)
		}
	}
	// Offsets keep full precision: Azure's 100 ns TIMESTAMPs decades after the epoch.
	path := writeFile(t, "a.csv", azureHead+"2023-11-16 18:15:46.6805900,5,3\n2023-11-16 18:15:46.6805901,5,3\n")
	src, err := New(Config{Dataset: "azure:" + path, LengthsOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := src.Request(0, 1).Arrival; a != 100*time.Nanosecond {
		t.Errorf("second arrival %v, want 100ns", a)
	}
}
