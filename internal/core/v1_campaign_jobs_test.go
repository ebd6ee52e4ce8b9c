package core

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
)

// TestV1CampaignJobs: the campaign-jobs wire types carry every field of the
// launcher's types: a fully populated view maps onto JSON identical to the
// internal view's and back unchanged, and a request (the forwarded environment
// included) survives the trip onto the wire and back.
func TestV1CampaignJobs(t *testing.T) {
	view := filled[campaign.JobView]()
	want := mustJSON(t, view)
	if got := mustJSON(t, V1CampaignJob(view)); !bytes.Equal(got, want) {
		t.Fatalf("mapped view JSON differs:\n got %s\nwant %s", got, want)
	}
	var wire v1.CampaignJob
	if err := json.Unmarshal(want, &wire); err != nil {
		t.Fatal(err)
	}
	if back := CampaignJobFromV1(wire); !reflect.DeepEqual(back, view) {
		t.Errorf("view back from the wire:\n got %+v\nwant %+v", back, view)
	}

	req := filled[campaign.JobRequest]()
	req.Stored = nil    // a callback, not data
	req.Spec.Owner = "" // in memory only (placement's), never on the wire
	if len(req.Spec.Env) == 0 || len(req.Agents) == 0 || req.Spec.Container == nil {
		t.Fatalf("the filler left fields empty: %+v", req)
	}
	b := mustJSON(t, V1CampaignJobRequest(req))
	var onWire v1.CampaignJobRequest
	if err := json.Unmarshal(b, &onWire); err != nil {
		t.Fatal(err)
	}
	if back := CampaignJobRequestFromV1(onWire); !reflect.DeepEqual(back, req) {
		t.Errorf("request back from the wire:\n got %+v\nwant %+v", back, req)
	}
	// The spec travels as the job spec's own JSON (env included).
	var spec struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if want := mustJSON(t, req.Spec); !bytes.Equal(spec.Spec, want) {
		t.Errorf("spec on the wire:\n got %s\nwant %s", spec.Spec, want)
	}
}
