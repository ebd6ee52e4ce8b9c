package core

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/draft"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// filler sets every exported field of a value to a distinct non-zero value, one
// element per slice and map, so a field a mapping forgets changes the JSON.
type filler struct{ n int }

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
)

func (f *filler) fill(v reflect.Value) {
	f.n++
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, f.n*1000, time.UTC)))
		return
	case v.Type() == rawType:
		var d scheduler.Decision
		f.fill(reflect.ValueOf(&d).Elem())
		b, err := json.Marshal(&d)
		if err != nil {
			panic(err)
		}
		v.SetBytes(b)
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+f.n%26)) + time.Duration(f.n).String())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n) * int64(time.Second))
		if v.Type().Bits() < 64 || v.Type().Kind() == reflect.Int && v.Type().Name() == "int" {
			v.SetInt(int64(f.n))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n % 200))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0))
		v.Set(s)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			f.fill(v.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(k)
		f.fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	}
}

func filled[T any]() T {
	var v T
	(&filler{}).fill(reflect.ValueOf(&v).Elem())
	return v
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestV1JSONMatchesInternal: for fully populated internal values, the JSON of the
// mapped api/v1 value is byte-identical to the JSON of the internal value (what the
// API answered before the wire types), and that JSON decodes into the v1 type and
// encodes back unchanged (what the Go client reads). A field missing from a v1 type
// or from a mapping fails here.
func TestV1JSONMatchesInternal(t *testing.T) {
	type draftOut struct {
		draft.Result
		Drafter string `json:"drafter"`
	}
	cases := []struct {
		name     string
		internal func() any
		mapped   func(any) any
		decode   func() any // a fresh v1 value to decode the internal JSON into
	}{
		{"envelope", func() any { return filled[model.Envelope]() },
			func(v any) any { return V1Envelope(v.(model.Envelope)) }, func() any { return new(v1.Envelope) }},
		{"submit request", func() any { return filled[SubmitRequest]() },
			func(v any) any { return V1SubmitRequest(v.(SubmitRequest)) }, func() any { return new(v1.SubmitRequest) }},
		{"submit result", func() any { r := filled[SubmitResult](); return &r },
			func(v any) any { return V1SubmitResult(v.(*SubmitResult)) }, func() any { return new(v1.SubmitResult) }},
		{"decision", func() any { d := filled[scheduler.Decision](); return &d },
			func(v any) any { return V1Decision(v.(*scheduler.Decision)) }, func() any { return new(v1.Decision) }},
		{"task detail", func() any { d := filled[TaskDetail](); return &d },
			func(v any) any { return V1TaskDetail(v.(*TaskDetail)) }, func() any { return new(v1.TaskDetail) }},
		{"task list", func() any { return filled[[]TaskSummary]() },
			func(v any) any { return V1TaskSummaries(v.([]TaskSummary)) }, func() any { return new([]v1.TaskSummary) }},
		{"logs", func() any { l := filled[JobLogs](); return &l },
			func(v any) any { return V1Logs(v.(*JobLogs)) }, func() any { return new(v1.Logs) }},
		{"event page", func() any { p := filled[EventPage](); return &p },
			func(v any) any { return V1EventPage(v.(*EventPage)) }, func() any { return new(v1.EventPage) }},
		{"draft", func() any { return filled[draftOut]() },
			func(v any) any { d := v.(draftOut); return V1Draft(d.Result, d.Drafter) }, func() any { return new(v1.DraftResult) }},
		{"snapshot", func() any { s := filled[model.ResourceSnapshot](); return &s },
			func(v any) any { return V1Snapshot(v.(*model.ResourceSnapshot)) }, func() any { return new(v1.ResourceSnapshot) }},
		{"history", func() any { return filled[[]store.HistoryPoint]() },
			func(v any) any { return V1History(v.([]store.HistoryPoint)) }, func() any { return new([]v1.HistoryPoint) }},
		{"status", func() any { s := filled[Status](); return &s },
			func(v any) any { return V1Status(v.(*Status)) }, func() any { return new(v1.Status) }},
		{"about", func() any { return filled[About]() },
			func(v any) any { return V1About(v.(About)) }, func() any { return new(v1.About) }},
		{"resource detail", func() any { d := filled[ResourceDetail](); return &d },
			func(v any) any { return V1ResourceDetail(v.(*ResourceDetail)) }, func() any { return new(v1.ResourceDetail) }},
		{"site env", func() any { return filled[SiteEnv]() },
			func(v any) any { return V1SiteEnv(v.(SiteEnv)) }, func() any { return new(v1.SiteEnv) }},
		{"exec result", func() any { return filled[ExecResult]() },
			func(v any) any { return V1ExecResult(v.(ExecResult)) }, func() any { return new(v1.ExecResult) }},
		{"campaign runs", func() any { return filled[[]CampaignRunSummary]() },
			func(v any) any { return V1CampaignRuns(v.([]CampaignRunSummary)) }, func() any { return new([]v1.CampaignRunSummary) }},
		{"campaign run", func() any { d := filled[CampaignRunDetail](); return &d },
			func(v any) any { return V1CampaignRun(v.(*CampaignRunDetail)) }, func() any { return new(v1.CampaignRunDetail) }},
		{"campaign timeline", func() any { tl := filled[CampaignTimeline](); return &tl },
			func(v any) any { return V1CampaignTimeline(v.(*CampaignTimeline)) }, func() any { return new(v1.CampaignTimeline) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.internal()
			want := mustJSON(t, in)
			if got := mustJSON(t, tc.mapped(in)); !bytes.Equal(got, want) {
				t.Fatalf("mapped v1 JSON differs from the internal JSON:\n got %s\nwant %s", got, want)
			}
			dec := tc.decode()
			if err := json.Unmarshal(want, dec); err != nil {
				t.Fatalf("the internal JSON does not decode into the v1 type: %v\n%s", err, want)
			}
			if got := mustJSON(t, dec); !bytes.Equal(got, want) {
				t.Fatalf("decoded v1 value re-encodes differently:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestV1RequestBodiesMatchTheCore: a request body the client writes with a v1 type is
// read by the API with the core's own type (which accepts more duration forms), so the
// two must have the same fields: a fully populated value of either encodes to JSON
// that the other decodes and encodes back byte for byte.
func TestV1RequestBodiesMatchTheCore(t *testing.T) {
	cases := []struct {
		name                 string
		internal, wire       func() any // fully populated values
		newInternal, newWire func() any // fresh values to decode into
	}{
		{"campaign", func() any { return filled[model.Campaign]() }, func() any { return filled[v1.Campaign]() },
			func() any { return new(model.Campaign) }, func() any { return new(v1.Campaign) }},
		{"envelope", func() any { return filled[model.Envelope]() }, func() any { return filled[v1.Envelope]() },
			func() any { return new(model.Envelope) }, func() any { return new(v1.Envelope) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, dir := range []struct {
				from string
				v    any
				into any
			}{{"core", tc.internal(), tc.newWire()}, {"v1", tc.wire(), tc.newInternal()}} {
				want := mustJSON(t, dir.v)
				if err := json.Unmarshal(want, dir.into); err != nil {
					t.Fatalf("from %s: %v\n%s", dir.from, err, want)
				}
				if got := mustJSON(t, dir.into); !bytes.Equal(got, want) {
					t.Fatalf("from %s: the other type drops or changes a field:\n got %s\nwant %s", dir.from, got, want)
				}
			}
		})
	}
}

// TestV1SubmitRequestRoundTrip: a request mapped onto the wire and back is the same
// request (the in-process MCP backend submits what the tool decoded).
func TestV1SubmitRequestRoundTrip(t *testing.T) {
	in := filled[SubmitRequest]()
	back := SubmitRequestFromV1(V1SubmitRequest(in))
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("round trip changed the request:\n got %+v\nwant %+v", back, in)
	}
}

// TestV1DurationForms: every duration form the core writes decodes, and numbers are
// seconds.
func TestV1DurationForms(t *testing.T) {
	for _, d := range []model.Duration{0, model.Duration(45 * time.Second), model.Duration(90 * time.Minute),
		model.Duration(48 * time.Hour), model.Duration(1500 * time.Millisecond), model.Duration(-2 * time.Hour)} {
		b := mustJSON(t, d)
		var got v1.Duration
		if err := json.Unmarshal(b, &got); err != nil || got != v1.Duration(d) {
			t.Errorf("%s: got %v, %v", b, got, err)
		}
		if vb := mustJSON(t, got); !bytes.Equal(vb, b) {
			t.Errorf("%s re-encodes as %s", b, vb)
		}
	}
	var n v1.Duration
	if err := json.Unmarshal([]byte("90"), &n); err != nil || n.D() != 90*time.Second {
		t.Errorf("90: got %v, %v", n, err)
	}
	for _, bad := range []string{`"soon"`, `true`, `1e300`} {
		if err := json.Unmarshal([]byte(bad), &n); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// BenchmarkV1Decision: mapping an explained decision with 1,000 candidates onto the
// wire (a JSON round trip; the API then encodes the result once more).
func BenchmarkV1Decision(b *testing.B) {
	d := filled[scheduler.Decision]()
	c := d.Candidates[0]
	d.Candidates = make([]*scheduler.Candidate, 1000)
	for i := range d.Candidates {
		cc := *c
		d.Candidates[i] = &cc
	}
	b.ReportAllocs()
	for b.Loop() {
		V1Decision(&d)
	}
}

// BenchmarkV1Snapshot: mapping a 1,000-record snapshot onto the wire (a copy).
func BenchmarkV1Snapshot(b *testing.B) {
	s := filled[model.ResourceSnapshot]()
	r := s.Records[0]
	s.Records = make([]model.ResourceRecord, 1000)
	for i := range s.Records {
		s.Records[i] = r
	}
	b.ReportAllocs()
	for b.Loop() {
		V1Snapshot(&s)
	}
}

// TestV1DecisionOfAPlacement: a fresh placement decision (its trace still lazy, built
// by Explain) maps onto the same JSON as encoding it, and the stored trace a task read
// returns is that JSON too.
func TestV1DecisionOfAPlacement(t *testing.T) {
	w := newSimWorld(t, 60, [][2]string{{"A@X", ""}, {"B@Y", ""}})
	env := &model.Envelope{CPUCores: model.IntRange{Min: 1}, MemoryGB: model.IntRange{Min: 1},
		Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute)}}
	for _, dry := range []bool{true, false} {
		res, err := w.c.SubmitTask(context.Background(), SubmitRequest{Name: "v1", Command: "true", Envelope: env, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		got := mustJSON(t, V1Decision(res.Decision)) // first: explains the lazy trace
		want := mustJSON(t, res.Decision)
		if !bytes.Equal(got, want) {
			t.Fatalf("dry=%v: mapped decision differs:\n got %s\nwant %s", dry, got, want)
		}
		var d v1.Decision
		if err := json.Unmarshal(want, &d); err != nil || len(d.Candidates) == 0 || d.ChosenCandidate() == nil {
			t.Fatalf("dry=%v: decoded decision %+v (%v): want candidates and a chosen one", dry, d, err)
		}
		if dry {
			continue
		}
		td, err := w.c.Task(context.Background(), res.Task.ID)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := V1TaskDetail(td).DecisionTrace()
		if err != nil || stored == nil || stored.Chosen != d.Chosen || len(stored.Candidates) != len(d.Candidates) {
			t.Fatalf("stored trace %+v (%v), want the placement's (%s, %d candidates)", stored, err, d.Chosen, len(d.Candidates))
		}
	}
}
