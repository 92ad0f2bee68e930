package calibrate

import (
	"math"
	"sort"
)

// minimize finds a local minimum of f by Nelder–Mead from x0, each coordinate's first step
// being step[i]; it stops after maxEval evaluations or when the simplex's values agree to
// tol. Deterministic. f may return +Inf for an infeasible point.
func minimize(f func([]float64) float64, x0, step []float64, maxEval int, tol float64) ([]float64, float64) {
	n := len(x0)
	type vertex struct {
		x []float64
		v float64
	}
	evals := 0
	eval := func(x []float64) float64 { evals++; return f(x) }
	simplex := make([]vertex, n+1)
	simplex[0] = vertex{append([]float64(nil), x0...), eval(x0)}
	for i := 0; i < n; i++ {
		x := append([]float64(nil), x0...)
		x[i] += step[i]
		simplex[i+1] = vertex{x, eval(x)}
	}
	point := func(c []float64, d []float64, a float64) []float64 { // c + a (d - c)
		x := make([]float64, n)
		for i := range x {
			x[i] = c[i] + a*(d[i]-c[i])
		}
		return x
	}
	for evals < maxEval {
		sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
		best, worst := simplex[0], simplex[n]
		if !math.IsInf(worst.v, 1) && math.Abs(worst.v-best.v) <= tol*(math.Abs(best.v)+tol) {
			break
		}
		centroid := make([]float64, n)
		for _, s := range simplex[:n] {
			for i := range centroid {
				centroid[i] += s.x[i] / float64(n)
			}
		}
		r := point(centroid, worst.x, -1)
		rv := eval(r)
		switch {
		case rv < best.v:
			e := point(centroid, worst.x, -2)
			if ev := eval(e); ev < rv {
				simplex[n] = vertex{e, ev}
			} else {
				simplex[n] = vertex{r, rv}
			}
		case rv < simplex[n-1].v:
			simplex[n] = vertex{r, rv}
		default:
			c := point(centroid, worst.x, 0.5)
			if rv < worst.v {
				c = point(centroid, r, 0.5)
			}
			if cv := eval(c); cv < math.Min(rv, worst.v) {
				simplex[n] = vertex{c, cv}
				continue
			}
			for i := 1; i <= n; i++ { // shrink towards the best
				x := point(best.x, simplex[i].x, 0.5)
				simplex[i] = vertex{x, eval(x)}
			}
		}
	}
	sort.SliceStable(simplex, func(i, j int) bool { return simplex[i].v < simplex[j].v })
	return simplex[0].x, simplex[0].v
}
