package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// TestIdleExplanationOverTheWire: GET /api/idle answers an empty result with the
// filter that removed everything (a model the federation lacks is named as such), and
// refuses a GPU model the catalogue does not know with 422 and the known names.
func TestIdleExplanationOverTheWire(t *testing.T) {
	cl, _, _ := wireClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cl.IdleExplained(ctx, v1.IdleQuery{GPUModel: "B200", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Partitions) != 0 || !strings.Contains(res.Explanation, "no partition in the federation has B200 GPUs (models here: A100") {
		t.Fatalf("B200: %d partitions, explanation %q", len(res.Partitions), res.Explanation)
	}
	if strings.Contains(res.Explanation, "fewer GPUs") {
		t.Errorf("a missing model is explained as too many GPUs: %q", res.Explanation)
	}
	res, err = cl.IdleExplained(ctx, v1.IdleQuery{GPUModel: "A100", GPUs: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Explanation, "A100 partitions have at most") || !strings.Contains(res.Explanation, "you asked for 100000") {
		t.Errorf("too many GPUs: %q", res.Explanation)
	}
	if res, err = cl.IdleExplained(ctx, v1.IdleQuery{}); err != nil || len(res.Partitions) == 0 || res.Explanation != "" {
		t.Errorf("unfiltered: %d partitions, %q, %v", len(res.Partitions), res.Explanation, err)
	}
	_, err = cl.IdleExplained(ctx, v1.IdleQuery{GPUModel: "B300"})
	var ve *v1.Error
	if !errors.As(err, &ve) || ve.Status/100 != 4 || !strings.Contains(err.Error(), "known models: A100") {
		t.Fatalf("unknown model: %v", err)
	}
	if ve.Status == http.StatusInternalServerError {
		t.Fatal("500 for a bad model")
	}
}

// TestAuthStatusWithoutSignIn: with no Globus client the web UI's GET /auth/status is
// told "not configured" (200), not a 404 the browser logs on every page; the other
// /auth/ routes stay unmounted, and /auth/status still needs authentication.
func TestAuthStatusWithoutSignIn(t *testing.T) {
	hs, _ := coreServer(t, Options{Token: "tok"})
	var st struct {
		Configured *bool `json:"configured"`
		SignedIn   bool  `json:"signed_in"`
	}
	if code := apiGet(t, hs, "/auth/status", nil, &st); code != http.StatusOK || st.Configured == nil || *st.Configured || st.SignedIn {
		t.Fatalf("GET /auth/status: %d %+v", code, st)
	}
	if code := apiGet(t, hs, "/auth/login", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET /auth/login without a client: %d, want 404", code)
	}
	resp, err := hs.Client().Get(hs.URL + "/auth/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /auth/status without a token: %d, want 401", resp.StatusCode)
	}
}
