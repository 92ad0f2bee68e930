package plan

import (
	"strings"

	"github.com/llmbench/llmbench/internal/fielderr"
	"github.com/llmbench/llmbench/internal/sim"
)

// Model is the model a plan searches over: a preset on the default profile's roofline and
// engine, or a profile, serving a model config when one is given.
type Model struct {
	Shape   string // a model preset (sim.ModelPresets); "" for Profile's model
	Profile string // a profile (sim.LoadProfile), with Shape ""
	Config  string // a config.json, served on Profile's roofline instead of its model
	// ProfileGiven says Profile was chosen rather than left at the default: the base serving
	// a config on the default profile is named after the config.
	ProfileGiven bool
}

// Base is the profile the space is built on. Each problem is a *fielderr.Error of Model's
// field (Model.Shape, Model.Profile, Model.Config).
func (m Model) Base() (sim.Profile, error) {
	if m.Shape == "" {
		base, err := sim.LoadProfile(m.Profile)
		if err != nil {
			return base, &fielderr.Error{Field: "Model.Profile", Err: err}
		}
		if m.Config != "" {
			if base, err = base.WithModelConfig(m.Config); err != nil {
				return base, &fielderr.Error{Field: "Model.Config", Err: err}
			}
			if !m.ProfileGiven {
				base.Name = m.Config
			}
		}
		return base, nil
	}
	base, _ := sim.LoadProfile(sim.DefaultProfile)
	shape, ok := sim.ModelPreset(m.Shape)
	base.Model, base.Name = shape, m.Shape
	if !ok {
		return base, fielderr.New("Model.Shape", "%q is not a model preset (%s)", m.Shape, strings.Join(sim.ModelPresets(), ", "))
	}
	return base, nil
}
