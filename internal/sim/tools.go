package sim

// ToolConfig is how the simulated model answers a request that offers tools (function
// definitions): with a tool call or with text. It shapes the answer only; a tool call's
// tokens cost what text tokens cost.
type ToolConfig struct {
	// AutoCall is the fraction of requests whose tool_choice is auto (or not given) that are
	// answered with a tool call, the others with text; nil means DefaultAutoToolCall.
	AutoCall *float64
}

// DefaultAutoToolCall is the fraction of auto requests answered with a tool call when the
// profile sets none: all of them, as an agent's model called with tools mostly calls one,
// and a task's last answer (text) is the workload's to ask for (tool_choice none).
const DefaultAutoToolCall = 1.0

// The tool choices the simulator tells apart; any other value names a function to call.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	ToolChoiceNone     = "none"
)

// AutoCallFraction is AutoCall, or its default.
func (t ToolConfig) AutoCallFraction() float64 {
	if t.AutoCall == nil {
		return DefaultAutoToolCall
	}
	return *t.AutoCall
}

// CallsTool says whether the answer to a request offering tools with tool choice choice
// ("auto" or "", "required", "none", or a function's name) is a tool call: never with
// none, always with required or a named function, and with auto for a seeded fraction
// AutoCallFraction of the keys (key: the request's identity, e.g. its arrival number), so
// a run is reproducible by its seed.
func (t ToolConfig) CallsTool(choice string, seed int64, key uint64) bool {
	switch choice {
	case ToolChoiceNone:
		return false
	case "", ToolChoiceAuto:
		f := t.AutoCallFraction()
		if f >= 1 {
			return true
		}
		u := float64(splitmix64(uint64(seed)^key^0x746f6f6c)>>11) / (1 << 53) // "tool"
		return u < f
	}
	return true
}

func (t ToolConfig) validate() []error {
	if f := t.AutoCall; f != nil && !(*f >= 0 && *f <= 1) { // NaN too
		return []error{keyErrorf("tools.auto_call_fraction", "must be in [0, 1], got %g", *f)}
	}
	return nil
}
