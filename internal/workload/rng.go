package workload

import "math/rand/v2"

// Every random choice is a pure function of (seed, purpose, a, b): a fresh PCG stream per
// request, so Request(level, i) needs no shared state and any order of calls gives the same
// requests.
const (
	purposeLength uint64 = iota + 1
	purposePrompt
	purposePrefix
	purposeBlock
	purposeOrder
	purposeIdentity
	purposeFill
	purposeTurn
	purposeImage
	purposeTool
	purposeAgent
)

func mix64(x uint64) uint64 {
	// splitmix64's finaliser: a bijection on uint64 with good avalanche.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func streamKey(seed int64, purpose uint64, a int64) uint64 {
	return mix64(mix64(uint64(seed)^purpose*0x9e3779b97f4a7c15) ^ uint64(a))
}

func newRand(seed int64, purpose uint64, a, b int64) *rand.Rand {
	return rand.New(rand.NewPCG(streamKey(seed, purpose, a), uint64(b)))
}

// identity maps i injectively to a 64-bit value for a fixed (seed, level): mix64 is a
// bijection, so distinct i give distinct values, spread over the whole range.
func identity(seed int64, level, i int) uint64 {
	return mix64(streamKey(seed, purposeIdentity, int64(level)) ^ uint64(i))
}

// permute returns the position of i in a seeded permutation of [0, n): a small Feistel
// network over the next power of four with cycle walking, so no table of n entries is kept.
func permute(i, n int, key uint64) int {
	if n <= 1 {
		return 0
	}
	bits := 2
	for 1<<bits < n {
		bits += 2
	}
	half := uint(bits / 2)
	mask := uint64(1)<<half - 1
	x := uint64(i)
	for {
		l, r := x>>half, x&mask
		for round := uint64(0); round < 4; round++ {
			l, r = r, l^(mix64(r^key^round*0x9e3779b97f4a7c15)&mask)
		}
		x = l<<half | r
		if x < uint64(n) {
			return int(x)
		}
	}
}
