// Package suggest finds the name a user probably meant, for "did you mean" hints.
package suggest

import (
	"fmt"
	"strings"
)

// Nearest returns the candidate nearest to word by edit distance (case-insensitive), at
// most a third of word's length away, or "" when none is that close.
func Nearest(word string, candidates []string) string {
	best, bestD := "", len(word)/3+1
	for _, c := range candidates {
		if d := Distance(strings.ToLower(word), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean is " (did you mean X?)" for the candidate nearest to word (Nearest), or "".
func DidYouMean(word string, candidates []string) string {
	best := Nearest(word, candidates)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// Distance is the Levenshtein distance between a and b (in bytes).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
