package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"concurrency", "duration", "o200k_base"}
	for word, want := range map[string]string{"concurency": "concurrency", "DURATION": "duration", "xyz": "", "o200k_bsae": "o200k_base"} {
		if got := Nearest(word, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance = %d, want 3", d)
	}
}
