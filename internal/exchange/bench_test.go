package exchange

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmarks of the exchange over loopback HTTP, for each backend:
//
//	go test -run='^$' -bench=Exchange -benchmem ./internal/exchange/
//
// For comparison with Redis itself:
//
//	redis-server --port 6390 --save '' --appendonly no &
//	redis-benchmark -q -n 100000 -t set,get -p 6390
func benchBackends(b *testing.B) map[string]func() Backend {
	return map[string]func() Backend{
		"memory": func() Backend { return NewMemory() },
		"redis": func() Backend {
			url := startRedis(b)
			return newRedisBackend(b, url, "bench:")
		},
	}
}

// rawCall is a Fatal-free request for use from RunParallel goroutines.
func rawCall(hc *http.Client, method, url, tok string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

type benchPair struct {
	sendBody, recvBody []byte
}

func newBenchPair(b *testing.B, h *harness) benchPair {
	a, u := ent("a", RoleAgent), ent("u", RoleUser)
	h.register(h.tokA, a, "")
	h.register(h.tokA, u, "")
	m, _ := pingReq(u, a)
	sb, _ := json.Marshal(map[string]string{"message": m})
	rb, _ := json.Marshal(map[string]any{"mailbox": a.Encode(), "timeout": 5})
	return benchPair{sendBody: sb, recvBody: rb}
}

// BenchmarkExchangeRoundTrip measures one send (PUT /message) plus one blocking
// receive (GET /message) of a small message on one connection.
func BenchmarkExchangeRoundTrip(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			h := newHarness(b, benchBackends(b)[name](), Config{})
			p := newBenchPair(b, h)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if code, body, err := rawCall(h.hc, "PUT", h.url+"/message", h.tokA, p.sendBody); err != nil || code != 200 {
					b.Fatalf("send: %d %s %v", code, body, err)
				}
				if code, body, err := rawCall(h.hc, "GET", h.url+"/message", h.tokA, p.recvBody); err != nil || code != 200 {
					b.Fatalf("receive: %d %s %v", code, body, err)
				}
			}
		})
	}
}

// BenchmarkExchangeThroughput runs many agents at once (GOMAXPROCS x 8), each
// sending to and receiving from its own mailbox; it reports messages/s.
func BenchmarkExchangeThroughput(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			h := newHarness(b, benchBackends(b)[name](), Config{})
			var next atomic.Int64
			pairs := make([]benchPair, 64)
			for i := range pairs {
				pairs[i] = newBenchPair(b, h)
			}
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				p := pairs[int(next.Add(1)-1)%len(pairs)]
				for pb.Next() {
					if code, body, err := rawCall(h.hc, "PUT", h.url+"/message", h.tokA, p.sendBody); err != nil || code != 200 {
						b.Errorf("send: %d %s %v", code, body, err)
						return
					}
					if code, body, err := rawCall(h.hc, "GET", h.url+"/message", h.tokA, p.recvBody); err != nil || code != 200 {
						b.Errorf("receive: %d %s %v", code, body, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkExchangeBackend measures the backends without HTTP: Put then Get.
func BenchmarkExchangeBackend(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			be := benchBackends(b)[name]()
			ctx := context.Background()
			a, u := ent("a", RoleAgent), ent("u", RoleUser)
			for _, id := range []EntityID{a, u} {
				if _, _, err := be.Create(ctx, MailboxRecord{ID: id, Run: "r"}, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			raw, _ := pingReq(u, a)
			msg, err := ParseMessage([]byte(raw))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := be.Put(ctx, msg, MessageRecord{Run: "r", Time: time.Now()}, Limits{}); err != nil {
					b.Fatal(err)
				}
				if _, err := be.Get(ctx, "r", a.UID, time.Second); err != nil {
					b.Fatal(fmt.Errorf("get: %w", err))
				}
			}
		})
	}
}
