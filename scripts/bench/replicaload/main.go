// Command replicaload is team mode's load benchmark (docs/PERFORMANCE.md, "Team
// mode"): it starts three `mosaic serve --replica` processes of the real binary on one
// store and a small simulated federation, then runs N concurrent API clients spread
// over the replicas for a while — mixed reads (task list, task detail, the event
// list: answered by any replica from the store; the federation snapshot: forwarded to
// the leader by a follower) and submissions (forwarded to the leader, each with an
// Idempotency-Key) — and prints p50/p99 latency per kind and overall, and the errors.
//
//	go build -o /tmp/mosaic ./cmd/mosaic
//	go run ./scripts/bench/replicaload -mosaic /tmp/mosaic -clients 50 -duration 30s
//
// The store is MOSAIC_DB when it is a postgres:// URL, else one SQLite file (WAL) in
// a temporary directory shared by the three processes. Standard library only.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

const sites = `sim:
  speed: 60
  seed: 3
  workdir: %s
systems:
  - name: Alpha
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - {name: cpu, nodes: 64, cpu_cores: 64, memory_gb: 256, max_walltime: 4h}
    sim:
      load: {utilization: 0}
  - name: Beta
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - {name: cpu, nodes: 64, cpu_cores: 64, memory_gb: 256, max_walltime: 4h}
    sim:
      load: {utilization: 0}
`

type sample struct {
	kind string
	d    time.Duration
	err  bool
	msg  string // the error, if any
}

func main() {
	bin := flag.String("mosaic", "", "the mosaic binary (go build -o /tmp/mosaic ./cmd/mosaic)")
	clients := flag.Int("clients", 50, "concurrent API clients")
	dur := flag.Duration("duration", 30*time.Second, "how long the clients run")
	replicas := flag.Int("replicas", 3, "mosaic serve replicas")
	submitShare := flag.Float64("submit", 0.2, "share of requests that are submissions")
	tick := flag.Duration("tick", 2*time.Second, "the replicas' probe tick")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "replicaload: give the binary with -mosaic (go build -o /tmp/mosaic ./cmd/mosaic)")
		os.Exit(2)
	}
	if err := run(*bin, *clients, *replicas, *dur, *submitShare, *tick); err != nil {
		fmt.Fprintln(os.Stderr, "replicaload:", err)
		os.Exit(1)
	}
}

func run(bin string, clients, replicas int, dur time.Duration, submitShare float64, tick time.Duration) error {
	dir, err := os.MkdirTemp("", "mosaic-replicaload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sitesFile := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(sitesFile, []byte(fmt.Sprintf(sites, filepath.Join(dir, "sim"))), 0o600); err != nil {
		return err
	}
	db := os.Getenv("MOSAIC_DB")
	if !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
		db = filepath.Join(dir, "state", "shared.db")
	}
	env := append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "MOSAIC_DB="+db, "NO_COLOR=1")
	var urls []string
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGINT)
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = p.Process.Kill()
			}
		}
	}()
	for i := range replicas {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		cmd := exec.Command(bin, "serve", "--replica", "--headless", "--addr", addr, "--sites", sitesFile, "--tick", tick.String())
		cmd.Env, cmd.Dir = env, dir
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("replica%d.log", i)))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		url := "http://" + addr
		if err := waitHealthy(url, 20*time.Second); err != nil {
			b, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("replica %d: %w\n%s", i, err, b)
		}
		urls = append(urls, url)
	}
	tokB, err := os.ReadFile(filepath.Join(dir, "config", "mosaic", "token"))
	if err != nil {
		return err
	}
	token := strings.TrimSpace(string(tokB))
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}

	// A few tasks first, so detail reads have something to read.
	var seeded []string
	for i := range 10 {
		id, err := submit(hc, urls[i%len(urls)], token, fmt.Sprintf("seed%02d", i))
		if err != nil {
			return fmt.Errorf("seeding: %w", err)
		}
		seeded = append(seeded, id)
	}

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var mu sync.Mutex
	var samples []sample
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := urls[c%len(urls)] // clients spread over the replicas
			rng := mrand.New(mrand.NewPCG(uint64(c), 1))
			var local []sample
			for n := 0; ctx.Err() == nil && n < 1_000_000; n++ {
				var s sample
				start := time.Now()
				r := rng.Float64()
				switch {
				case r < submitShare:
					s.kind = "submit"
					_, err := submit(hc, base, token, fmt.Sprintf("load%02d-%d", c, n))
					s.setErr(err)
				case r < submitShare+(1-submitShare)*0.35:
					s.kind = "list"
					s.setErr(get(hc, base+"/api/tasks?limit=20", token))
				case r < submitShare+(1-submitShare)*0.7:
					s.kind = "detail"
					s.setErr(get(hc, base+"/api/tasks/"+seeded[rng.IntN(len(seeded))], token))
				case r < submitShare+(1-submitShare)*0.85:
					s.kind = "events"
					s.setErr(get(hc, base+"/api/events?limit=50", token))
				default:
					s.kind = "federation"
					s.setErr(get(hc, base+"/api/federation", token))
				}
				s.d = time.Since(start)
				if ctx.Err() != nil && s.err {
					break // cut off by the end of the run, not an error of the core
				}
				local = append(local, s)
			}
			mu.Lock()
			samples = append(samples, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	report(samples, clients, replicas, dur, db)
	for i, p := range procs {
		if p.ProcessState != nil || p.Process.Signal(syscall.Signal(0)) != nil {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("replica%d.log", i)))
			fmt.Printf("replica %d exited during the run:\n%s\n", i, lastLines(string(b), 5))
		}
	}
	return nil
}

func (s *sample) setErr(err error) {
	if err != nil {
		s.err, s.msg = true, err.Error()
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func report(samples []sample, clients, replicas int, dur time.Duration, db string) {
	store := "SQLite (one WAL file shared by the replicas)"
	if strings.HasPrefix(db, "postgres") {
		store = "PostgreSQL"
	}
	fmt.Printf("%d clients over %d replicas for %s, store %s\n", clients, replicas, dur, store)
	fmt.Printf("%-11s %8s %8s %10s %10s %10s\n", "kind", "requests", "errors", "p50", "p99", "max")
	kinds := map[string][]sample{}
	for _, s := range samples {
		kinds[s.kind] = append(kinds[s.kind], s)
	}
	names := []string{"list", "detail", "events", "federation", "submit"}
	for _, k := range names {
		line(k, kinds[k])
	}
	line("all", samples)
	fmt.Printf("throughput: %.0f requests/s\n", float64(len(samples))/dur.Seconds())
	seen := map[string]int{}
	for _, s := range samples {
		if s.err {
			seen[s.kind+": "+s.msg]++
		}
	}
	for m, n := range seen {
		fmt.Printf("error ×%d: %.300s\n", n, m)
	}
}

func line(kind string, ss []sample) {
	if len(ss) == 0 {
		return
	}
	ds := make([]time.Duration, 0, len(ss))
	errs := 0
	for _, s := range ss {
		ds = append(ds, s.d)
		if s.err {
			errs++
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	pct := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	fmt.Printf("%-11s %8d %8d %10s %10s %10s\n", kind, len(ss), errs, pct(0.50).Round(100*time.Microsecond),
		pct(0.99).Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond))
}

func submit(hc *http.Client, base, token, name string) (string, error) {
	body := fmt.Sprintf(`{"name":%q,"command":"true","envelope":{"cpu_cores":{"min":1,"max":1},"walltime":{"min":"5m","max":"5m"}}}`, name)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/tasks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	var k [16]byte
	_, _ = rand.Read(k[:])
	req.Header.Set("Idempotency-Key", hex.EncodeToString(k[:]))
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("submit: %d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var res struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Task.ID == "" {
		return "", fmt.Errorf("submit: answer %.200s", b)
	}
	return res.Task.ID, nil
}

func get(hc *http.Client, url, token string) error {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return nil
}

func waitHealthy(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s/healthz did not answer 200 within %s", url, within)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
