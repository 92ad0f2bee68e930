package bench

import (
	"net"
	neturl "net/url"

	"github.com/llmbench/llmbench/internal/gpumetrics"
)

// LocalGPU is this machine's nvidia-smi, read during each level, when no GPU exporter is
// given (Telemetry), the target runs here (a loopback URL: not the simulator, whose GPUs
// are not this machine's) and lookPath (exec.LookPath, or a test's) finds one; nil
// otherwise, and nothing is claimed.
func (s *Spec) LocalGPU(lookPath func(string) (string, error)) *gpumetrics.Local {
	if len(s.Telemetry.GPUs) > 0 || s.Telemetry.NoGPU || s.InProcess || !loopbackURL(s.URL) {
		return nil
	}
	l, ok := gpumetrics.FindLocal(lookPath)
	if !ok {
		return nil
	}
	return l
}

// loopbackURL says url's host is this machine: localhost or a loopback address.
func loopbackURL(url string) bool {
	u, err := neturl.Parse(url)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
