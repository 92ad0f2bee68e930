package bench

import (
	"os/exec"
	"testing"
)

// The local nvidia-smi is read only for a target on this machine, given no GPU exporter
// and not told to read none, and when one is on the PATH.
func TestLocalGPUChoice(t *testing.T) {
	found := func(string) (string, error) { return "/usr/bin/nvidia-smi", nil }
	for _, tc := range []struct {
		cfg  Spec
		path func(string) (string, error)
		want bool
	}{
		{Spec{Server: Server{URL: "http://127.0.0.1:8000"}}, found, true},
		{Spec{Server: Server{URL: "http://localhost:8000/v1"}}, found, true},
		{Spec{Server: Server{URL: "http://[::1]:8000"}}, found, true},
		{Spec{Server: Server{URL: "http://10.0.0.7:8000"}}, found, false},                   // another machine's GPUs
		{Spec{InProcess: true, Server: Server{URL: "http://127.0.0.1:8000"}}, found, false}, // the simulator
		{Spec{Server: Server{URL: "http://127.0.0.1:8000"}, Telemetry: Telemetry{NoGPU: true}}, found, false},
		{Spec{Server: Server{URL: "http://127.0.0.1:8000"}, Telemetry: Telemetry{GPUs: []string{"http://127.0.0.1:9400/metrics"}}}, found, false},
		{Spec{Server: Server{URL: "http://127.0.0.1:8000"}}, func(string) (string, error) { return "", exec.ErrNotFound }, false},
	} {
		if got := tc.cfg.LocalGPU(tc.path); (got != nil) != tc.want {
			t.Errorf("%+v: local nvidia-smi %v, want %v", tc.cfg, got != nil, tc.want)
		}
	}
}
