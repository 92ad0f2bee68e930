package bench

import (
	"fmt"
	"time"

	"github.com/llmbench/llmbench/internal/load"
	"github.com/llmbench/llmbench/internal/sim"
)

// Deploy is profile p's deployment on a virtual clock, one way for every caller, so that
// simulate and plan predict what calibrate's fit checked: its one engine (the hot path of
// a single replica stays direct) or its replicas behind their router, behind the profile's
// network (a calibrated profile's round trip and front end; none otherwise).
func Deploy(p sim.Profile) (load.VirtualServer, error) {
	var srv load.VirtualServer
	if p.Deployment.Replicas > 1 {
		f, err := sim.NewFleet(p)
		if err != nil {
			return nil, err
		}
		srv = f
	} else {
		v, err := sim.NewVirtual(p)
		if err != nil {
			return nil, err
		}
		srv = v
	}
	rtt, jitter, fe, perToken := p.NetworkDelays()
	return load.WithNetwork(srv, load.Network{RTT: rtt, Jitter: jitter, FrontEnd: fe, PerPromptToken: perToken}), nil
}

// EnergyOf is the estimated GPU energy (sim.EstimateEnergy) of srv, a deployment of p that
// Deploy built, over span; false when p's GPU states no power.
func EnergyOf(p sim.Profile, srv load.VirtualServer, span time.Duration) (sim.Energy, bool) {
	for {
		switch s := srv.(type) {
		case interface{ Busy() (float64, uint64) }:
			busy, tokens := s.Busy()
			return sim.EstimateEnergy(p, busy, tokens, span)
		case interface{ Unwrap() load.VirtualServer }:
			srv = s.Unwrap()
		default:
			return sim.Energy{}, false
		}
	}
}

// SeqsNeeded is the SeqsNeeded of the engines behind srv, a deployment Deploy built: the
// smallest max_num_seqs under which they would have run as they did (see sim.Virtual).
func SeqsNeeded(srv load.VirtualServer) int {
	for {
		switch s := srv.(type) {
		case interface{ SeqsNeeded() int }:
			return s.SeqsNeeded()
		case interface{ Unwrap() load.VirtualServer }:
			srv = s.Unwrap()
		default:
			panic(fmt.Sprintf("bench.SeqsNeeded: %T is no deployment of Deploy's", srv))
		}
	}
}
