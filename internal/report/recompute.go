package report

import (
	"errors"
	"fmt"

	"github.com/llmbench/llmbench/internal/metrics"
	"github.com/llmbench/llmbench/internal/record"
	"github.com/llmbench/llmbench/internal/schedule"
)

// Recompute replaces every level's figures in sum by those aggregated from dir's
// records.jsonl, read once, keeping each level's load description; the collector it
// returns holds report.html's charts.
//
// With vllm the collector also keeps each level's requests for vllm.json's arrays.
func Recompute(dir string, sum *Summary, cfg metrics.Config, vllm bool) (*Collector, error) {
	col := NewCollector(cfg)
	col.SharedPrefix = sum.Workload.PrefixTokens + sum.Workload.ChatPrefixTokens
	if vllm {
		col.KeepVLLMRequests()
	}
	path, err := record.Find(dir)
	if err != nil {
		return nil, err
	}
	// A records.jsonl whose last line a killed writer cut short is taken as it stands, noted.
	if err := record.EachInFile(path, func(r *record.Record) error { col.Add(r); return nil }); errors.Is(err, record.ErrTruncated) {
		col.Note(err.Error())
	} else if err != nil {
		return nil, err
	}
	if sum.EndReason == EndRunning {
		sum.EndReason = EndKilled
	}
	planned := sum.Load.Levels
	for _, lvl := range col.Indices() {
		switch {
		case lvl < 0:
			return nil, fmt.Errorf("records.jsonl: negative level %d", lvl)
		case lvl < len(sum.Levels):
		case lvl < len(planned):
			// A level the run had started when it was killed: its load comes from the
			// configuration; its figures are partial.
			for len(sum.Levels) <= lvl {
				p := planned[len(sum.Levels)]
				l := Level{Name: p.Name(), Concurrency: p.Concurrency, Rate: p.Rate, Partial: true}
				if st, err := schedule.ParseStages(p.Stages); err == nil && p.Stages != "" {
					l.Stages = StagesOf(st)
				}
				sum.Levels = append(sum.Levels, l)
			}
		default:
			return nil, fmt.Errorf("records.jsonl: level %d is not in summary.json (it lists %d levels)", lvl, len(sum.Levels))
		}
	}
	for i := range sum.Levels {
		sum.Levels[i].Level = col.Level(i)
		sum.Levels[i].PrefixCacheHits = col.PrefixCacheHits(i)
		sum.Levels[i].Endpoints = col.Endpoints(i, sum.Target.Endpoints)
		sum.Levels[i].Stages = col.Stages(i, sum.Levels[i].Stages)
	}
	sum.Judge()
	return col, nil
}
