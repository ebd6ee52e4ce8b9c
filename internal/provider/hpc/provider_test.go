package hpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// fakeSite answers commands by program name and records every call.
type fakeSite struct {
	calls  [][]string
	stdins []string
	answer func(argv []string) (transport.Result, error)
}

func (f *fakeSite) Run(_ context.Context, argv []string, stdin io.Reader) (transport.Result, error) {
	f.calls = append(f.calls, argv)
	in := ""
	if stdin != nil {
		b, _ := io.ReadAll(stdin)
		in = string(b)
	}
	f.stdins = append(f.stdins, in)
	return f.answer(argv)
}

func newFake(t *testing.T, sys site.System, answer func([]string) (transport.Result, error)) (*Provider, *fakeSite) {
	f := &fakeSite{answer: answer}
	if sys.Kind == "" {
		sys.Kind = site.KindLocal
	}
	p, err := New(sys, WithTransport(f), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return p, f
}

const sinfoOut = "cpu|n1|mixed|64|8/56/0/64|256000|8192|gpu:a100:4|gpu:a100:2(IDX:0-1)|2-00:00:00|up|1-infinite|(null)|\n" +
	"gpu|n1|mixed|64|8/56/0/64|256000|8192|gpu:a100:4|gpu:a100:2(IDX:0-1)|1-00:00:00|up|1-infinite|(null)|\n" +
	"debug|n2|idle|8|0/8/0/8|16000|0|(null)|(null)|30:00|up|1|(null)|\n"

func TestProbeExpandsAccountsAndCatalog(t *testing.T) {
	sys := site.System{Name: "X@Y", User: "alice", Accounts: []string{"a1", "a2"}, Arch: "aarch64", ContainerRuntimes: []string{"apptainer"},
		Partitions: []site.Partition{{Name: "gpu", MaxWalltime: model.Duration(12 * time.Hour), Accounts: []string{"g1"}, ChargeFactor: 2},
			{Name: "cpu"}}}
	p, f := newFake(t, sys, func(argv []string) (transport.Result, error) {
		switch argv[0] {
		case "sinfo":
			return transport.Result{Stdout: []byte(sinfoOut)}, nil
		case "squeue":
			return transport.Result{Stdout: []byte("1|gpu|alice|RUNNING\n2|gpu|bob|PENDING\n")}, nil
		}
		return transport.Result{ExitCode: 127}, nil
	})
	recs, err := p.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 {
		t.Errorf("%d calls: %v", len(f.calls), f.calls)
	}
	var keys []string
	for _, r := range recs {
		keys = append(keys, r.Key())
	}
	if strings.Join(keys, " ") != "X@Y/cpu/a1 X@Y/cpu/a2 X@Y/gpu/g1" {
		t.Fatalf("records %v (debug is not in the catalog, gpu has its own account)", keys)
	}
	g := recs[2]
	if g.WalltimeCap != model.Duration(12*time.Hour) || g.ChargeFactor != 2 || g.Arch != "aarch64" || g.Provider != "local" ||
		g.MyRunningJobs != 1 || g.PendingJobs != 1 || g.ContainerRuntimes[0] != "apptainer" {
		t.Errorf("gpu record %+v", g)
	}
}

func TestSubmitUploadsThenSubmits(t *testing.T) {
	sys := site.System{Name: "X", WorkDir: "/scratch/alice", Accounts: []string{"acct"}}
	p, f := newFake(t, sys, func(argv []string) (transport.Result, error) {
		if argv[0] == "sbatch" {
			return transport.Result{Stdout: []byte("4242;cluster\n")}, nil
		}
		return transport.Result{}, nil
	})
	sp := model.JobSpec{Tag: "mosaic-t9-1", Partition: "gpu", Nodes: 1, Walltime: model.Duration(time.Hour), Command: "echo 'hi'"}
	id, err := p.Submit(context.Background(), sp)
	if err != nil || id != "4242" {
		t.Fatalf("%q %v", id, err)
	}
	if len(f.calls) != 2 || f.calls[0][0] != "sh" || f.calls[0][len(f.calls[0])-1] != "/scratch/alice/mosaic/mosaic-t9-1.sbatch" {
		t.Fatalf("calls %q", f.calls)
	}
	if got := strings.Join(f.calls[1], " "); got != "sbatch --parsable /scratch/alice/mosaic/mosaic-t9-1.sbatch" {
		t.Errorf("submit %q", got)
	}
	for _, want := range []string{"#SBATCH --account=acct", "#SBATCH --chdir=/scratch/alice", "#SBATCH --output=/scratch/alice/mosaic/mosaic-t9-1.out", "echo 'hi'"} {
		if !strings.Contains(f.stdins[0], want) {
			t.Errorf("uploaded script lacks %q:\n%s", want, f.stdins[0])
		}
	}
	// No workdir: a clear error before any remote call.
	p2, f2 := newFake(t, site.System{Name: "Y"}, nil)
	if _, err := p2.Submit(context.Background(), sp); err == nil || !strings.Contains(err.Error(), "workdir") || len(f2.calls) != 0 {
		t.Errorf("no workdir: %v, %d calls", err, len(f2.calls))
	}
}

func TestStatusFallsBackOnceAndChunks(t *testing.T) {
	p, f := newFake(t, site.System{Name: "X"}, func(argv []string) (transport.Result, error) {
		switch argv[0] {
		case "sacct":
			return transport.Result{ExitCode: 1, Stderr: []byte("sacct: error: Slurm accounting storage is disabled\n")}, nil
		case "squeue":
			return transport.Result{Stdout: []byte("5|mosaic-a-1|COMPLETED|None|0:01|2026-11-30T03:44:43|2026-11-30T03:44:44|n1|2026-11-30T03:44:41|cpu|u\n")}, nil
		case "scontrol":
			return transport.Result{Stdout: []byte("JobId=5 JobName=mosaic-a-1 JobState=COMPLETED ExitCode=0:0\n")}, nil
		}
		return transport.Result{ExitCode: 127}, nil
	})
	st, err := p.Status(context.Background(), []string{"5", "6"})
	if err != nil || st["5"].State != model.JobSucceeded || len(st) != 1 {
		t.Fatalf("%+v %v", st, err)
	}
	if len(f.calls) != 3 {
		t.Errorf("first status: %d calls", len(f.calls))
	}
	f.calls = nil
	if _, err := p.Status(context.Background(), []string{"5"}); err != nil || len(f.calls) != 2 || f.calls[0][0] != "squeue" {
		t.Errorf("second status should go straight to the fallback: %q %v", f.calls, err)
	}
	// Many ids are split into bounded command lines.
	p3, f3 := newFake(t, site.System{Name: "Z"}, func([]string) (transport.Result, error) { return transport.Result{}, nil })
	ids := make([]string, 1201)
	for i := range ids {
		ids[i] = strconv.Itoa(1000 + i)
	}
	if _, err := p3.Status(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
	if len(f3.calls) != 3 {
		t.Errorf("1201 ids: %d calls, want 3", len(f3.calls))
	}
}

func TestTransportErrorsPropagate(t *testing.T) {
	down := errors.Join(errors.New("ssh x: connection refused"), provider.ErrSiteDown)
	p, _ := newFake(t, site.System{Name: "X", User: "u"}, func([]string) (transport.Result, error) { return transport.Result{}, down })
	if _, err := p.Probe(context.Background()); !errors.Is(err, provider.ErrSiteDown) {
		t.Errorf("probe: %v", err)
	}
	if _, err := p.Status(context.Background(), []string{"1"}); !errors.Is(err, provider.ErrSiteDown) {
		t.Errorf("status: %v", err)
	}
}

func TestEstimateUnsupportedOnPBS(t *testing.T) {
	p, f := newFake(t, site.System{Name: "P", Dialect: site.DialectPBS, WorkDir: "/w"}, nil)
	_, err := p.EstimateStart(context.Background(), model.JobSpec{Tag: "t", Partition: "q", Nodes: 1, Walltime: 1, Command: "x"})
	if !errors.Is(err, provider.ErrUnsupported) || len(f.calls) != 0 {
		t.Errorf("%v %d", err, len(f.calls))
	}
}

func TestNewValidates(t *testing.T) {
	for _, sys := range []site.System{{Name: "a", Kind: "ssh"}, {Name: "b", Kind: "sim"}, {Name: "c", Kind: "local", Dialect: "lsf"},
		{Name: "d", Kind: "ssh", Host: "h", SSH: &site.SSH{ConnectTimeout: "soon"}}} {
		if _, err := New(sys); err == nil {
			t.Errorf("%+v: want error", sys)
		}
	}
	p, err := New(site.System{Name: "e", Kind: "ssh", Host: "delta", User: "alice", SSH: &site.SSH{Port: 22, ConnectTimeout: "10s"}})
	if err != nil || p.Endpoint() != "alice@delta" || p.Kind() != "ssh" || p.System() != "e" {
		t.Errorf("%+v %v", p, err)
	}
}

// TestExpandCanonicalisesGPUModel: a record whose dialect reported a raw spelling
// ("a6000", "A100-80GB") carries the catalogue's name after expand, and a catalog
// partition that names the same model by an alias still agrees with it.
func TestExpandCanonicalisesGPUModel(t *testing.T) {
	sys := site.System{Name: "X@Y", User: "alice", Partitions: []site.Partition{{Name: "gpu", GPUModel: "RTXA6000", GPUMemoryGB: 48}, {Name: "big"}}}
	p, _ := newFake(t, sys, func([]string) (transport.Result, error) { return transport.Result{}, nil })
	recs := p.expand([]model.ResourceRecord{{Partition: "gpu", GPUModel: "a6000"}, {Partition: "big", GPUModel: "A100-80GB"}}, time.Now(), 1)
	by := map[string]model.ResourceRecord{}
	for _, r := range recs {
		by[r.Partition] = r
	}
	if g, b := by["gpu"], by["big"]; len(recs) != 2 || g.GPUModel != "RTXA6000" || g.GPUMemoryGB != 48 || b.GPUModel != "A100" || b.GPUMemoryGB != 80 {
		t.Errorf("records %+v", recs)
	}
}
