package rundesc

import (
	"testing"
)

func TestLevelName(t *testing.T) {
	for _, c := range []struct {
		l    Level
		want string
	}{
		{Level{Concurrency: 16}, "concurrency 16"},
		{Level{Rate: 2.5}, "rate 2.5/s"},
		{Level{Rate: 1.0 / 3}, "rate 0.3333/s"},
	} {
		if got := c.l.Name(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}

func TestShard(t *testing.T) {
	for _, s := range []string{"0/1", "2/3", "7/8"} {
		i, n, err := ParseShard(s)
		if err != nil || ShardString(i, n) != s {
			t.Errorf("%q: %d/%d, %v", s, i, n, err)
		}
	}
	if i, n, err := ParseShard(""); err != nil || i != 0 || n != 1 {
		t.Errorf(`"": %d/%d, %v; want the whole run`, i, n, err)
	}
	for _, s := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		if _, _, err := ParseShard(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
