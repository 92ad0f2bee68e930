// Package gputest serves recorded GPU-exporter scrapes to tests: the scrape as recorded,
// its energy counters advanced at each GPU's recorded power as the (possibly fake) clock
// runs, so that a level's energy is its power times its time, to be derived by hand.
package gputest

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// counters are the exporters' energy counters and their units per joule.
var counters = map[string]float64{
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 1e3, // mJ
	"gpu_energy_consumed":                  1e6, // µJ
}

// powers are the power gauges (W) the counters advance at.
var powers = map[string]bool{"DCGM_FI_DEV_POWER_USAGE": true, "gpu_power_usage": true}

var indexLabel = regexp.MustCompile(`\b(?:gpu|gpu_id)="([^"]*)"`)

// Replay serves scrape (one exposition) from start: each counter line's value is the
// recorded one plus its GPU's recorded power times the seconds since start, in the
// counter's unit. Without counters (dropCounters) the exporter has power alone.
func Replay(scrape []byte, start time.Time, dropCounters bool) (http.Handler, error) {
	lines := strings.Split(string(scrape), "\n")
	power := map[string]float64{}
	for _, ln := range lines {
		name, _, _ := strings.Cut(ln, "{")
		if !powers[name] {
			continue
		}
		m := indexLabel.FindStringSubmatch(ln)
		v, err := strconv.ParseFloat(ln[strings.LastIndexByte(ln, ' ')+1:], 64)
		if m == nil || err != nil {
			return nil, fmt.Errorf("power line %q: no GPU index or value", ln)
		}
		power[m[1]] = v
	}
	if len(power) == 0 {
		return nil, fmt.Errorf("no DCGM_FI_DEV_POWER_USAGE or gpu_power_usage lines")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		el := time.Since(start).Seconds()
		var b strings.Builder
		for _, ln := range lines {
			name, _, _ := strings.Cut(ln, "{")
			if strings.HasPrefix(ln, "# ") {
				f := strings.Fields(ln)
				if len(f) > 2 {
					name = f[2]
				}
			}
			unit, isCounter := counters[name]
			switch {
			case isCounter && dropCounters:
				continue
			case isCounter && !strings.HasPrefix(ln, "#"):
				i := strings.LastIndexByte(ln, ' ')
				v, err := strconv.ParseFloat(ln[i+1:], 64)
				m := indexLabel.FindStringSubmatch(ln)
				if err != nil || m == nil {
					http.Error(w, "bad counter line "+ln, http.StatusInternalServerError)
					return
				}
				ln = fmt.Sprintf("%s %s", ln[:i], strconv.FormatFloat(v+power[m[1]]*el*unit, 'f', -1, 64))
			}
			b.WriteString(ln + "\n")
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write([]byte(strings.TrimSuffix(b.String(), "\n")))
	}), nil
}
