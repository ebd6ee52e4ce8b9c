package campaign

import (
	"maps"
	"slices"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

type modelAgent = model.CampaignAgent

// cloneAgent deep-copies an agent so that slices never alias the parent spec.
func cloneAgent(a model.CampaignAgent) model.CampaignAgent {
	a.Command = slices.Clone(a.Command)
	a.AllowedPeers = slices.Clone(a.AllowedPeers)
	a.Env = maps.Clone(a.Env)
	if a.Envelope != nil {
		e := *a.Envelope
		a.Envelope = &e
	}
	return a
}
