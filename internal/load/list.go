package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseList reads a comma list of positive numbers (whole ones when integer), stopping at
// the first that is not; an empty list is nil. The error names the item, not the flag.
func ParseList(s string, integer bool) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		v, err := strconv.ParseFloat(part, 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("%q is not a number", part)
		case v <= 0:
			return nil, fmt.Errorf("%q must be positive", part)
		case integer && v != math.Trunc(v):
			return nil, fmt.Errorf("%q must be a whole number", part)
		}
		out = append(out, v)
	}
	return out, nil
}
