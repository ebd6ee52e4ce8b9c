package exchange

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/mailbox"}, {"GET", "/mailbox"}, {"DELETE", "/mailbox"}, {"PUT", "/message"}, {"GET", "/message"},
	{"GET", "/mailbox/listen"}, {"GET", "/discover"}, {"GET", "/mailbox/heartbeat"}, {"GET", "/mailbox/stats"},
	{"GET", "/run/timeline"},
}

// FuzzExchangeRequest feeds arbitrary bodies to every route, as the run's
// operator of an open run or as an agent of a campaign run: the server never
// panics, never answers 5xx with a healthy backend, and accepts a message
// only when it parses.
//
//	go test -run='^$' -fuzz=FuzzExchangeRequest -fuzztime=60s -fuzzminimizetime=3s ./internal/exchange
//
// (a short -fuzzminimizetime: the default minimizes each new input for up to
// 60 s, during which the execs counter stands still)
func FuzzExchangeRequest(f *testing.F) {
	a, u := agentEnt("r", "coordinator"), ent("mosaic", RoleUser)
	reg := `{"mailbox":` + jsonString(a.Encode()) + `}`
	ping, _ := pingReq(u, a)
	for i := range fuzzRoutes {
		f.Add(uint8(i), false, []byte(reg))
		f.Add(uint8(i), true, []byte(reg))
	}
	f.Add(uint8(3), false, []byte(`{"message":`+jsonString(ping)+`}`))
	f.Add(uint8(4), true, []byte(`{"mailbox":`+jsonString(a.Encode())+`,"timeout":0.001}`))
	f.Add(uint8(0), true, []byte(`{"mailbox":`+jsonString(a.Encode())+`,"holder":{"instance":"i","host":"h","pid":1}}`))
	f.Add(uint8(6), false, []byte(`{"agent":"A","allow_subclasses":null}`))
	f.Add(uint8(1), false, []byte(`{"mailbox":"{\"uid\":\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\",\"role\":\"user\"}"}`))

	ctx := context.Background()
	srv := NewServer(Config{MaxWait: time.Millisecond, PingInterval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	open, err := srv.IssueToken(ctx, "open")
	if err != nil {
		f.Fatal(err)
	}
	op, err := srv.IssueToken(ctx, "r")
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.RegisterCampaign(ctx, "r", chatCampaign()); err != nil {
		f.Fatal(err)
	}
	agentTok := (&harness{tokA: op}).agentTokFor("r", "coordinator")
	f.Fuzz(func(t *testing.T, route uint8, asAgent bool, data []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		tok := open
		if asAgent {
			tok = agentTok
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(rctx, rt.method, rt.path, bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", rt.method, rt.path, data, rec.Code, rec.Body)
		}
		if rt.path == "/message" && rt.method == "PUT" && rec.Code == http.StatusOK {
			var b struct{ Message string }
			if err := jsonUnmarshal(data, &b); err != nil {
				t.Fatalf("accepted a body that does not decode: %v", err)
			}
			if _, err := ParseMessage([]byte(b.Message)); err != nil {
				t.Fatalf("accepted a message that does not parse: %v", err)
			}
		}
	})
}
