package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// TestCampaignTokenWireTypes: the campaign-token route takes v1.CampaignTokenRequest
// (its JSON decodes into the handler's body, the core's campaign type, with nothing
// dropped) and answers exactly v1.CampaignTokenResponse (no field either side lacks).
// Before, the body was the core's type alone and the answer an anonymous struct.
func TestCampaignTokenWireTypes(t *testing.T) {
	cl, _, _ := wireClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	camp := &v1.Campaign{Name: "wire", InitialAgent: "a", Agents: []v1.CampaignAgent{
		{Name: "a", Command: []string{"true"}, AllowedPeers: []string{"b"}},
		{Name: "b", Command: []string{"true"}, Envelope: &v1.Envelope{Walltime: v1.DurationRange{Min: v1.Duration(time.Hour)}}},
	}, Exchange: v1.ExchangeSettings{DiscoverTimeout: v1.Duration(90 * time.Second)}}
	tok, err := cl.CampaignToken(ctx, "wire-1", camp)
	if err != nil {
		t.Fatal(err)
	}
	if tok.RunID != "wire-1" || tok.ExchangePath != ExchangePrefix || tok.Token == "" {
		t.Fatalf("token answer %+v", tok)
	}

	// The answer has no field v1 lacks.
	body, _ := json.Marshal(v1.CampaignTokenRequest{Campaign: camp})
	req, _ := http.NewRequest("POST", cl.URL()+"/api/campaigns/wire-2/token", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d, %v: want 201 and a JSON object", resp.StatusCode, err)
	}
	delete(got, "$schema") // huma's link to the response's schema
	var typed v1.CampaignTokenResponse
	b, _ := json.Marshal(got)
	if err := json.Unmarshal(b, &typed); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(typed)
	var back map[string]any
	if err := json.Unmarshal(again, &back); err != nil || !reflect.DeepEqual(back, got) || typed.Token == "" {
		t.Fatalf("the answer is not exactly v1.CampaignTokenResponse:\n answered %s\n v1 reads %s", b, again)
	}
	// The request decodes into the handler's body with nothing dropped.
	var in campaignTokenBody
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	if back, _ := json.Marshal(in); !bytes.Equal(back, body) {
		t.Fatalf("the core read a different request:\n sent %s\n read %s", body, back)
	}
}
