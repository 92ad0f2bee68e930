package load

import (
	"slices"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, c := range []struct {
		in      string
		integer bool
		want    []float64
		err     string
	}{
		{"", true, nil, ""},
		{" 1, 2 ,4", true, []float64{1, 2, 4}, ""},
		{"0.5,2", false, []float64{0.5, 2}, ""},
		{"0.5", true, nil, `"0.5" must be a whole number`},
		{"1,0", false, nil, `"0" must be positive`},
		{"1,x,-1", false, nil, `"x" is not a number`},
		{"NaN", false, nil, `"NaN" is not a number`},
		{"1,", true, nil, `"" is not a number`},
	} {
		got, err := ParseList(c.in, c.integer)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("ParseList(%q, %v) = %v, %v; want error %s", c.in, c.integer, got, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseList(%q, %v) = %v, %v; want %v", c.in, c.integer, got, err, c.want)
		}
	}
}
