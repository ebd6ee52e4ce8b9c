package model

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads and writes the forms HPC users type:
// Go durations ("90m", "2h30m"), Slurm times ("HH:MM:SS", "MM:SS", "D-HH[:MM[:SS]]"),
// plain minutes as Slurm reads them ("30"), and JSON numbers (seconds).
// It marshals to a compact Go-style string ("48h", "1h30m").
type Duration time.Duration

// D returns the standard library duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Seconds is a convenience for arithmetic.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// String renders the shortest Go duration ("48h", "1h30m", "45s").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Slurm renders the duration as Slurm's [D-]HH:MM:SS, rounding up to whole seconds.
func (d Duration) Slurm() string {
	total := int64((time.Duration(d) + time.Second - 1) / time.Second)
	if total < 0 {
		total = 0
	}
	days := total / 86400
	h := (total % 86400) / 3600
	m := (total % 3600) / 60
	s := total % 60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}

// MarshalJSON writes the String form.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a string in any ParseDuration form or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if len(s) > 0 && s[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		v, err := ParseDuration(str)
		if err != nil {
			return err
		}
		*d = v
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"2h\" or a number of seconds", s)
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// MarshalYAML writes the String form (gopkg.in/yaml.v3 Marshaler).
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalText lets YAML/flag decoders read any ParseDuration form.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDuration reads "90m", "2h30m", "1:30:00", "30:00", "2-12", "2-12:30:00",
// "UNLIMITED"/"infinite" (returns 0 with ok) and a bare number of minutes (Slurm's
// convention for --time). Empty input is an error.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	switch strings.ToLower(s) {
	case "unlimited", "infinite", "none":
		return 0, nil
	}
	if strings.ContainsAny(s, "hmsuµn") && !strings.Contains(s, ":") {
		d, err := time.ParseDuration(s)
		if err == nil {
			return Duration(d), nil
		}
		// "2d" or "1d12h"
		if i := strings.IndexByte(s, 'd'); i > 0 {
			days, err1 := strconv.Atoi(s[:i])
			rest := time.Duration(0)
			var err2 error
			if i+1 < len(s) {
				rest, err2 = time.ParseDuration(s[i+1:])
			}
			if err1 == nil && err2 == nil && days >= 0 {
				return Duration(time.Duration(days)*24*time.Hour + rest), nil
			}
		}
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	if strings.HasSuffix(s, "d") {
		days, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
		if err == nil && days >= 0 {
			return Duration(time.Duration(days) * 24 * time.Hour), nil
		}
	}
	return parseSlurmTime(s)
}

func parseSlurmTime(s string) (Duration, error) {
	bad := func() (Duration, error) {
		return 0, fmt.Errorf("duration %q: want \"2h30m\", \"HH:MM:SS\", \"D-HH:MM:SS\" or minutes", s)
	}
	days := 0
	rest := s
	if i := strings.IndexByte(s, '-'); i >= 0 {
		d, err := strconv.Atoi(s[:i])
		if err != nil || d < 0 {
			return bad()
		}
		days = d
		rest = s[i+1:]
	}
	parts := strings.Split(rest, ":")
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return bad()
		}
		nums[i] = n
	}
	var h, m, sec int
	if days > 0 || strings.Contains(s, "-") {
		// D-HH, D-HH:MM, D-HH:MM:SS
		switch len(nums) {
		case 1:
			h = nums[0]
		case 2:
			h, m = nums[0], nums[1]
		case 3:
			h, m, sec = nums[0], nums[1], nums[2]
		default:
			return bad()
		}
	} else {
		// MM, MM:SS, HH:MM:SS
		switch len(nums) {
		case 1:
			m = nums[0]
		case 2:
			m, sec = nums[0], nums[1]
		case 3:
			h, m, sec = nums[0], nums[1], nums[2]
		default:
			return bad()
		}
	}
	total := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour +
		time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
	return Duration(total), nil
}
