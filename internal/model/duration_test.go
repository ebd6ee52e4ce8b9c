package model

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseDurationForms(t *testing.T) {
	h, m, s := time.Hour, time.Minute, time.Second
	for in, want := range map[string]time.Duration{
		"90m": 90 * m, "2h30m": 2*h + 30*m, "1.5h": 90 * m, "300ms": 300 * time.Millisecond, "1.5µs": 1500,
		"2d": 48 * h, "1d12h": 36 * h, "1.5d": 36 * h, "1d30m15s": 24*h + 30*m + 15*s, "+2h": 2 * h, ".5h": 30 * m,
		"30": 30 * m, "0": 0, "30:00": 30 * m, "1:30:00": 90 * m, "90:00": 90 * m,
		"2-12": 60 * h, "2-12:30": 60*h + 30*m, "2-12:30:05": 60*h + 30*m + 5*s, "0-00:00:01": s,
		"366d": 366 * 24 * h, "1h2d": 49 * h, "365-23:59:59": 366*24*h - s, "8784h": 366 * 24 * h,
		"UNLIMITED": 0, "infinite": 0, "none": 0, " 2h ": 2 * h,
	} {
		got, err := ParseDuration(in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", in, err)
			continue
		}
		if got.D() != want {
			t.Errorf("ParseDuration(%q) = %v, want %v", in, got.D(), want)
		}
	}
}

// TestParseDurationRefuses is finding 7: "213504d" wrapped around to 25m26s and was
// accepted. Every overflowing or over-limit form is refused naming the limit; malformed
// and negative input is refused with the forms that work.
func TestParseDurationRefuses(t *testing.T) {
	cases := []struct{ in, want string }{
		{"213504d", `duration "213504d" is over the 366-day limit`},
		{"367d", "over the 366-day limit"},
		{"366d1s", "over the 366-day limit"},
		{"8785h", "over the 366-day limit"},
		{"366-00:00:01", "over the 366-day limit"},
		{"213504-00:00:00", "over the 366-day limit"},
		{"0-0:0:99999999999999999999", "over the 366-day limit"},
		{"9223372036854775807", "over the 366-day limit"},   // minutes
		{"99999999999999999999h", "over the 366-day limit"}, // beyond int64
		{"2562047h47m16.854775808s", "over the 366-day limit"},
		{"106751d23h47m16.854775808s", "over the 366-day limit"},
		{"527041", "over the 366-day limit"}, // minutes: 366 days and 1 minute
		{"200d200d", "over the 366-day limit"},
		{"-1h", "negative"},
		{"-2d", "negative"},
		{"-0-01:00:00", "negative"},
		{"", "empty duration"},
		{"   ", "empty duration"},
		{"2x", "want a form"},
		{"h", "want a form"},
		{"1h-5m", "want a form"},
		{"1:2:3:4", "want a form"},
		{"1-2:3:4:5", "want a form"},
		{"-", "negative"},
		{"1-", "want a form"},
		{"1::2", "want a form"},
		{"+5:00", "want a form"},
		{"1.5", "want a form"},
		{"1e3h", "want a form"},
		{"2 h", "want a form"},
		{"2days", "want a form"},
		{".h", "want a form"},
		{"+", "want a form"},
		{"1h\x00", "want a form"},
		{strings.Repeat("1", 65), "too long"},
	}
	for _, tc := range cases {
		got, err := ParseDuration(tc.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error containing %q", tc.in, got, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseDuration(%q) error %q does not contain %q", tc.in, err, tc.want)
		}
	}
}

// TestParseSiteDuration: what a site reports may exceed the user limit but never
// wraps around.
func TestParseSiteDuration(t *testing.T) {
	if d, err := ParseSiteDuration("45682:59:56"); err != nil || d.D() != 45682*time.Hour+59*time.Minute+56*time.Second {
		t.Errorf("ParseSiteDuration(45682:59:56) = %v, %v", d, err)
	}
	if d, err := ParseSiteDuration("1000-00:00:00"); err != nil || d.D() != 1000*24*time.Hour {
		t.Errorf("ParseSiteDuration(1000-00:00:00) = %v, %v", d, err)
	}
	if d, err := ParseSiteDuration("2562047h47m16.854775807s"); err != nil || d != Duration(math.MaxInt64) {
		t.Errorf("ParseSiteDuration(max) = %v, %v", d, err)
	}
	for _, in := range []string{"213504d", "106752-00:00:00", "2562047h47m16.854775808s", "153722867281m", "99999999999999999999"} {
		if d, err := ParseSiteDuration(in); err == nil {
			t.Errorf("ParseSiteDuration(%q) = %v, want an overflow error", in, d)
		}
	}
}

func TestDurationUnmarshalRefusesOverflow(t *testing.T) {
	var d Duration
	for _, in := range []string{`"213504d"`, `1e300`, `-1e300`, `9223372037`} {
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("json %s: accepted as %v", in, d)
		} else if !strings.Contains(err.Error(), "366-day limit") {
			t.Errorf("json %s: error %q does not name the limit", in, err)
		}
	}
	if err := json.Unmarshal([]byte(`"45682h"`), &d); err != nil || d.D() != 45682*time.Hour {
		t.Errorf("a long site limit must read back from stored JSON: %v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`90`), &d); err != nil || d.D() != 90*time.Second {
		t.Errorf("json 90 = %v, %v", d, err)
	}
	var y struct {
		W Duration `yaml:"w"`
	}
	if err := yaml.Unmarshal([]byte("w: 213504d\n"), &y); err == nil || !strings.Contains(err.Error(), "366-day limit") {
		t.Errorf("yaml 213504d: %v, %v", y.W, err)
	}
}

// TestEnvelopeWalltimeLimit is finding 7 at the envelope: a walltime that parses as
// data (JSON numbers, long site-style values) is still bounded by the 366-day limit.
func TestEnvelopeWalltimeLimit(t *testing.T) {
	_, err := DecodeEnvelopeJSON([]byte(`{"walltime":{"min":"1h","max":"400d"}}`))
	if err == nil || !strings.Contains(err.Error(), "walltime.max") || !strings.Contains(err.Error(), "366-day limit") {
		t.Errorf("400d walltime: %v", err)
	}
	_, err = DecodeEnvelopeJSON([]byte(`{"walltime":{"min":"1h"},"max_queue_wait":"500d"}`))
	if err == nil || !strings.Contains(err.Error(), "max_queue_wait") {
		t.Errorf("500d queue wait: %v", err)
	}
	_, err = DecodeEnvelopeJSON([]byte(`{"walltime":{"min":"213504d"}}`))
	if err == nil || !strings.Contains(err.Error(), `"213504d" is over the 366-day limit`) {
		t.Errorf("213504d walltime: %v", err)
	}
}

// FuzzParseDuration: no input panics; an accepted value is within [0, MaxDuration];
// its String form parses back to the same value; ParseSiteDuration agrees with
// ParseDuration on everything ParseDuration accepts.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90m", "2h30m", "1.5h", "2d", "1d12h", "1:30:00", "30:00", "2-12", "2-12:30:00",
		"30", "UNLIMITED", "213504d", "-1h", "366d", "0-0:0:99999999999999999999", "1.5µs", ".5h", "+2h", "1e3h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		sd, serr := ParseSiteDuration(s)
		if serr == nil && sd < 0 {
			t.Fatalf("ParseSiteDuration(%q) = %v: negative", s, sd)
		}
		if err != nil {
			return
		}
		if d < 0 || d > MaxDuration {
			t.Fatalf("ParseDuration(%q) = %v: outside [0, %v]", s, d, MaxDuration)
		}
		if serr != nil || sd != d {
			t.Fatalf("ParseSiteDuration(%q) = %v, %v; ParseDuration gave %v", s, sd, serr, d)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v; its String %q parses to %v, %v", s, d, d.String(), back, err)
		}
	})
}

// TestDurationDecodeKeepsNegatives: decoders pass a negative value on so that the
// validators (envelope, site file) refuse it naming the field.
func TestDurationDecodeKeepsNegatives(t *testing.T) {
	var d Duration
	if err := json.Unmarshal([]byte(`"-1h"`), &d); err != nil || d.D() != -time.Hour {
		t.Fatalf("json -1h = %v, %v", d, err)
	}
	e := Envelope{Walltime: DurationRange{Min: d}}
	if err := e.Validate(); err == nil || !strings.Contains(err.Error(), "walltime.min") {
		t.Errorf("negative walltime: %v", err)
	}
	if err := json.Unmarshal([]byte(`"--1h"`), &d); err == nil {
		t.Errorf("json --1h accepted as %v", d)
	}
}
