// Package gpumetrics reads GPU telemetry while a load level runs, from NVIDIA's dcgm-exporter
// and AMD's device-metrics-exporter (Prometheus text, their published metric names), and
// derives each level's power, energy and energy per token and per request.
package gpumetrics

import (
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmbench/llmbench/internal/servermetrics"
)

// Exporters, as written to summary.json.
const (
	SourceDCGM    = "dcgm-exporter"
	SourceAMD     = "amd-device-metrics-exporter"
	SourceUnknown = "unknown"
)

// Reading is one GPU in one scrape, in the common vocabulary; NaN marks a figure the exporter
// does not export.
type Reading struct {
	PowerW      float64 // power draw, W
	EnergyJ     float64 // counter: energy since the driver or the exporter started, J
	GPUUtilPct  float64 // GPU (DCGM) or graphics-engine (AMD) busy, %
	MemUtilPct  float64 // memory copy (DCGM) or memory controller (AMD) busy, %
	SMClockMHz  float64 // SM (DCGM) or system/GFX (AMD) clock, MHz
	MemUsedMiB  float64 // frame buffer (DCGM, MiB) or VRAM (AMD, "MB" in its docs) used
	TempC       float64 // GPU (DCGM) or junction, else edge (AMD) temperature, °C
	Throttle    uint64  // clock throttle (event) reasons, NVML's bitmask; DCGM only
	HasThrottle bool
}

func nanReading() Reading {
	n := math.NaN()
	return Reading{PowerW: n, EnergyJ: n, GPUUtilPct: n, MemUtilPct: n, SMClockMHz: n, MemUsedMiB: n, TempC: n}
}

// GPU names a device: Key is unique across the run's exporters (host and index).
type GPU struct {
	Key   string `json:"id"`
	Index string `json:"index"`
	Host  string `json:"host,omitempty"`
	UUID  string `json:"uuid,omitempty"` // DCGM's UUID, AMD's serial number
	Model string `json:"model,omitempty"`
}

// Scrape is one exposition mapped to the vocabulary: each GPU it names and its reading.
type Scrape struct {
	Source string
	GPUs   map[string]GPU
	Read   map[string]Reading
}

// field is one figure of Reading in one exporter: the first of names present wins; scale
// turns the exporter's unit into Reading's; where, when set, picks the samples of a
// shared metric (AMD's gpu_clock by clock_type).
type field struct {
	names []string
	scale float64
	where func(labels map[string]string) bool
	set   func(*Reading, float64)
}

type exporter struct {
	source      string
	marker      []string // metric names only this exporter uses, to recognise it
	index, host string   // label names
	uuid, model string
	fields      []field
	throttle    []string
}

func f(scale float64, set func(*Reading, float64), names ...string) field {
	return field{names: names, scale: scale, set: set}
}

// exporters maps each exporter's names and units to the vocabulary. DCGM: NVIDIA's
// dcgm-exporter etc/default-counters.csv (power W, energy mJ since boot, utilisation %,
// clock MHz, frame buffer MiB, temperature °C) and its DCGM_FI_DEV_CLOCK_THROTTLE_REASONS
// (renamed DCGM_FI_DEV_CLOCKS_EVENT_REASONS in DCGM 3.3). AMD: ROCm device-metrics-exporter
// docs/configuration/metricslist.md (power W, energy µJ, activity %, clock MHz by
// clock_type, VRAM MB, temperatures °C).
var exporters = []exporter{
	{
		source: SourceDCGM, marker: []string{"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
		index: "gpu", host: "Hostname", uuid: "UUID", model: "modelName",
		fields: []field{
			f(1, func(r *Reading, v float64) { r.PowerW = v }, "DCGM_FI_DEV_POWER_USAGE"),
			f(1e-3, func(r *Reading, v float64) { r.EnergyJ = v }, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
			f(1, func(r *Reading, v float64) { r.GPUUtilPct = v }, "DCGM_FI_DEV_GPU_UTIL"),
			f(1, func(r *Reading, v float64) { r.MemUtilPct = v }, "DCGM_FI_DEV_MEM_COPY_UTIL"),
			f(1, func(r *Reading, v float64) { r.SMClockMHz = v }, "DCGM_FI_DEV_SM_CLOCK"),
			f(1, func(r *Reading, v float64) { r.MemUsedMiB = v }, "DCGM_FI_DEV_FB_USED"),
			f(1, func(r *Reading, v float64) { r.TempC = v }, "DCGM_FI_DEV_GPU_TEMP"),
		},
		throttle: []string{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"},
	},
	{
		source: SourceAMD, marker: []string{"gpu_power_usage", "gpu_gfx_activity", "gpu_energy_consumed"},
		index: "gpu_id", host: "hostname", uuid: "serial_number", model: "card_model",
		fields: []field{
			f(1, func(r *Reading, v float64) { r.PowerW = v }, "gpu_power_usage", "gpu_package_power"),
			f(1e-6, func(r *Reading, v float64) { r.EnergyJ = v }, "gpu_energy_consumed"),
			f(1, func(r *Reading, v float64) { r.GPUUtilPct = v }, "gpu_gfx_activity"),
			f(1, func(r *Reading, v float64) { r.MemUtilPct = v }, "gpu_umc_activity"),
			{names: []string{"gpu_clock"}, scale: 1,
				where: func(l map[string]string) bool { return l["clock_type"] == "system" },
				set:   func(r *Reading, v float64) { r.SMClockMHz = v }},
			f(1, func(r *Reading, v float64) { r.MemUsedMiB = v }, "gpu_used_vram"),
			f(1, func(r *Reading, v float64) { r.TempC = v }, "gpu_junction_temperature", "gpu_edge_temperature"),
		},
	},
}

// Parse reads one exposition of either exporter. An exposition with neither's metrics is
// SourceUnknown with no GPUs.
func Parse(r io.Reader) (Scrape, error) {
	mfs, err := servermetrics.ParseText(r)
	if err != nil {
		return Scrape{}, err
	}
	return mapFamilies(mfs), nil
}

func mapFamilies(mfs map[string]*dto.MetricFamily) Scrape {
	for i := range exporters {
		e := &exporters[i]
		for _, m := range e.marker {
			if _, ok := mfs[m]; ok {
				return e.read(mfs)
			}
		}
	}
	return Scrape{Source: SourceUnknown}
}

func (e *exporter) read(mfs map[string]*dto.MetricFamily) Scrape {
	s := Scrape{Source: e.source, GPUs: map[string]GPU{}, Read: map[string]Reading{}}
	// each visits every sample of the first present name, with its GPU's reading.
	each := func(names []string, where func(map[string]string) bool, fn func(*Reading, float64)) {
		for _, name := range names {
			mf, ok := mfs[name]
			if !ok {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				idx, ok := labels[e.index]
				if !ok || where != nil && !where(labels) {
					continue
				}
				v := servermetrics.MetricValue(mf.GetType(), m)
				if math.IsNaN(v) {
					continue
				}
				g := GPU{Index: idx, Host: labels[e.host], UUID: labels[e.uuid], Model: labels[e.model]}
				g.Key = idx
				if g.Host != "" {
					g.Key = g.Host + "/" + idx
				}
				if _, seen := s.GPUs[g.Key]; !seen {
					s.GPUs[g.Key] = g
					s.Read[g.Key] = nanReading()
				}
				rd := s.Read[g.Key]
				fn(&rd, v)
				s.Read[g.Key] = rd
			}
			return
		}
	}
	for _, fl := range e.fields {
		scale, set := fl.scale, fl.set
		each(fl.names, fl.where, func(r *Reading, v float64) { set(r, v*scale) })
	}
	if len(e.throttle) > 0 {
		each(e.throttle, nil, func(r *Reading, v float64) {
			if v >= 0 {
				r.Throttle, r.HasThrottle = uint64(v), true
			}
		})
	}
	return s
}

// throttleNames are NVML's clock throttle (event) reason bits, as DCGM exports them.
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// ThrottleReasons names the bits of mask, in bit order; a bit NVML does not name is
// written as its hexadecimal value.
func ThrottleReasons(mask uint64) []string {
	var out []string
	for _, t := range throttleNames {
		if mask&t.bit != 0 {
			out = append(out, t.name)
			mask &^= t.bit
		}
	}
	for b := uint64(1); mask != 0 && b != 0; b <<= 1 {
		if mask&b != 0 {
			out = append(out, "0x"+strconv.FormatUint(b, 16))
			mask &^= b
		}
	}
	return out
}

// sortedKeys orders GPU keys by host, then numerically by index.
func sortedKeys(gpus map[string]GPU) []string {
	keys := make([]string, 0, len(gpus))
	for k := range gpus {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := gpus[keys[i]], gpus[keys[j]]
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		ai, errA := strconv.Atoi(a.Index)
		bi, errB := strconv.Atoi(b.Index)
		if errA == nil && errB == nil && ai != bi {
			return ai < bi
		}
		return strings.Compare(a.Index, b.Index) < 0
	})
	return keys
}
