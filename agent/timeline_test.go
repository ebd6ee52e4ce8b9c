package agent_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/agent"
)

const goodRecord = `{"run":"r1","time":"2026-12-01T12:00:00Z","src":"a","dest":"b","src_uid":"6bf604f9-3db7-533d-aa27-e2de86bd9440","dest_uid":"7bf604f9-3db7-533d-aa27-e2de86bd9440","src_site":"alpha","dest_site":"beta","kind":"ping-request","size":120,"tag":"8bf604f9-3db7-533d-aa27-e2de86bd9440"}`

// TestDecodeTimeline: answers of GET /run/timeline, good and malformed.
func TestDecodeTimeline(t *testing.T) {
	for _, c := range []struct {
		name, in, err string
		msgs          int
	}{
		{"good", `{"run":"r1","messages":[` + goodRecord + `],"counts":[{"site":"alpha","mailboxes":1,"sent":1}]}`, "", 1},
		{"empty run", `{"run":"r1"}`, "", 0},
		{"not json", `<html>`, "bad answer", 0},
		{"array", `[]`, "bad answer", 0},
		{"no run", `{"messages":[]}`, "no run", 0},
		{"record of another run", `{"run":"r2","messages":[` + goodRecord + `]}`, `of run "r1"`, 0},
		{"record without time", `{"run":"r1","messages":[{"run":"r1","src_uid":"6bf604f9-3db7-533d-aa27-e2de86bd9440","dest_uid":"6bf604f9-3db7-533d-aa27-e2de86bd9440"}]}`, "lacks", 0},
		{"record without uids", `{"run":"r1","messages":[{"run":"r1","time":"2026-12-01T12:00:00Z"}]}`, "lacks", 0},
		{"bad uid", `{"run":"r1","messages":[{"run":"r1","time":"2026-12-01T12:00:00Z","src_uid":"nope"}]}`, "bad answer", 0},
		{"negative size", `{"run":"r1","messages":[` + strings.Replace(goodRecord, `"size":120`, `"size":-1`, 1) + `]}`, "negative", 0},
		{"negative count", `{"run":"r1","counts":[{"site":"x","sent":-3}]}`, "negative count", 0},
		{"string count", `{"run":"r1","counts":[{"site":"x","sent":"3"}]}`, "bad answer", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl, err := agent.DecodeTimeline([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(tl.Messages) != c.msgs || tl.Messages == nil || tl.Counts == nil {
				t.Fatalf("%+v %v", tl, err)
			}
		})
	}
}

// TestTimelineOfANonMosaicExchange: an exchange without the route (Academy's
// own) answers 404; the error says the timeline cannot be read there, not that
// a mailbox is missing.
func TestTimelineOfANonMosaicExchange(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	c, err := agent.New(ts.URL, "mxt_x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Timeline(context.Background())
	if !errors.Is(err, agent.ErrNotFound) || !strings.Contains(err.Error(), "no "+agent.TimelinePath+" route") {
		t.Errorf("err %v", err)
	}
}

func FuzzDecodeTimeline(f *testing.F) {
	f.Add([]byte(`{"run":"r1","messages":[` + goodRecord + `],"counts":[{"site":"alpha"}]}`))
	f.Add([]byte(`{"run":"r1"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tl, err := agent.DecodeTimeline(data)
		if err != nil {
			return
		}
		if tl.Run == "" || tl.Messages == nil || tl.Counts == nil {
			t.Fatalf("accepted %q as %+v", data, tl)
		}
		for _, m := range tl.Messages {
			if m.Run != tl.Run || m.Size < 0 {
				t.Fatalf("accepted record %+v", m)
			}
		}
	})
}
