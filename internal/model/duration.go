package model

import (
	"encoding/json"
	"fmt"
	"math"
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

// UnmarshalJSON accepts a string in any ParseDuration form or a number of seconds;
// a value too large for a time.Duration is an error, never wrapped around.
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
		v, err := parseData(str)
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
	ns := f * float64(time.Second)
	// float64(math.MaxInt64) rounds up to 2^63, so >= is the overflow test.
	if ns != ns || ns >= float64(math.MaxInt64) || ns < float64(math.MinInt64) {
		return fmt.Errorf("duration %s seconds is over the %d-day limit", s, int64(MaxDuration.D()/day))
	}
	*d = Duration(ns)
	return nil
}

// parseData reads a duration from JSON, YAML or a flag. It accepts what sites report
// (ParseSiteDuration), so stored snapshots with long site limits read back; users'
// values are bounded where they are used (Envelope.Validate). Its errors are
// ParseDuration's, which name the user-facing limit.
//
// A leading minus is kept here (not in ParseDuration): the validators of envelopes
// and site files refuse negative values naming their field.
func parseData(s string) (Duration, error) {
	sign := Duration(1)
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "-") {
		sign, s = -1, t[1:]
	}
	v, err := ParseSiteDuration(s)
	if err != nil {
		if _, err2 := ParseDuration(s); err2 != nil {
			return 0, err2
		}
		return 0, err
	}
	return sign * v, nil
}

// MarshalYAML writes the String form (gopkg.in/yaml.v3 Marshaler).
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalText lets YAML/flag decoders read any ParseDuration form.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseData(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MaxDuration is the longest duration a user may type: walltimes, queue waits and
// timeouts are at most 366 days (a leap year). ParseDuration refuses anything longer;
// ParseSiteDuration, which reads what sites report, only refuses what does not fit in
// a time.Duration.
const MaxDuration = Duration(366 * 24 * time.Hour)

const day = 24 * time.Hour

// ParseDuration reads a duration a user typed: "90m", "2h30m", "1.5h", "2d", "1d12h",
// "1:30:00", "30:00", "2-12", "2-12:30:00", "UNLIMITED"/"infinite"/"none" (0) and a
// bare number of minutes (Slurm's convention for --time). Empty, negative and
// malformed input is an error, and so is anything over MaxDuration; the arithmetic is
// checked, so a huge number of days is refused rather than wrapped around.
func ParseDuration(s string) (Duration, error) { return parseDuration(s, MaxDuration) }

// ParseSiteDuration reads the same forms as ParseDuration for values a site reports
// (partition time limits, elapsed times), which may legitimately exceed MaxDuration
// (PBS prints "45682:59:56"). It refuses only what overflows a time.Duration.
func ParseSiteDuration(s string) (Duration, error) {
	return parseDuration(s, Duration(math.MaxInt64))
}

// overLimit is the error for a duration longer than limit.
func overLimit(s string, limit Duration) error {
	if limit == MaxDuration {
		return fmt.Errorf("duration %q is over the %d-day limit", s, int64(limit.D()/day))
	}
	return fmt.Errorf("duration %q is too large (over %d days)", s, int64(limit.D()/day))
}

func parseDuration(in string, limit Duration) (Duration, error) {
	s := strings.TrimSpace(in)
	if s == "" {
		return 0, fmt.Errorf("empty duration; give one such as \"2h\", \"1d12h\" or \"02:00:00\"")
	}
	if len(s) > 64 {
		return 0, fmt.Errorf("duration %.20q…: too long to be a duration (%d bytes)", s, len(s))
	}
	switch strings.ToLower(s) {
	case "unlimited", "infinite", "none":
		return 0, nil
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("duration %q is negative; give a positive length of time such as \"2h\"", s)
	}
	var d Duration
	var err error
	switch {
	case strings.ContainsAny(s, ":-"):
		d, err = parseSlurmTime(s, limit)
	case allDigits(s):
		d, err = sumChecked(s, limit, term{s, time.Minute})
	default:
		d, err = parseUnits(s, limit)
	}
	if err != nil {
		return 0, err
	}
	return d, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// term is a whole number of units (digits only).
type term struct {
	digits string
	unit   time.Duration
}

// sumChecked adds up terms, refusing any total over limit without overflowing.
func sumChecked(s string, limit Duration, terms ...term) (Duration, error) {
	var total int64
	lim := int64(limit)
	for _, t := range terms {
		if !allDigits(t.digits) {
			return 0, badDuration(s)
		}
		n, err := strconv.ParseInt(t.digits, 10, 64)
		if err != nil { // only a range error is possible here: all digits
			return 0, overLimit(s, limit)
		}
		u := int64(t.unit)
		if n > lim/u {
			return 0, overLimit(s, limit)
		}
		v := n * u
		if v > lim-total {
			return 0, overLimit(s, limit)
		}
		total += v
	}
	return Duration(total), nil
}

func badDuration(s string) error {
	return fmt.Errorf("duration %q: want a form such as \"2h30m\", \"2d\", \"1d12h\", \"HH:MM:SS\", \"D-HH:MM:SS\" or minutes", s)
}

// parseUnits reads Go-style durations with an extra unit d (24h): "1d12h", "90m",
// "1.5h", "300ms". Each number-unit term is read by time.ParseDuration (so fractions
// behave exactly as in Go) after its integer part is checked against limit; the sum is
// checked too.
func parseUnits(s string, limit Duration) (Duration, error) {
	rest := s
	if rest[0] == '+' {
		rest = rest[1:]
	}
	if rest == "" {
		return 0, badDuration(s)
	}
	var total int64
	lim := int64(limit)
	for n := 0; rest != ""; n++ {
		if n > 16 {
			return 0, badDuration(s)
		}
		// number: digits [. digits]
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		intPart := rest[:i]
		if i < len(rest) && rest[i] == '.' {
			i++
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				i++
			}
		}
		num := rest[:i]
		if num == "" || num == "." {
			return 0, badDuration(s)
		}
		// unit: letters (and µ/μ)
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9') && rest[j] != '.' {
			j++
		}
		unitText := rest[i:j]
		rest = rest[j:]
		var unit time.Duration
		goUnit := unitText
		switch unitText {
		case "ns":
			unit = time.Nanosecond
		case "us", "µs", "μs":
			unit = time.Microsecond
		case "ms":
			unit = time.Millisecond
		case "s":
			unit = time.Second
		case "m":
			unit = time.Minute
		case "h":
			unit = time.Hour
		case "d":
			unit, goUnit = day, "h"
		default:
			return 0, badDuration(s)
		}
		if intPart != "" {
			whole, err := strconv.ParseInt(intPart, 10, 64)
			if err != nil || whole > lim/int64(unit) {
				return 0, overLimit(s, limit)
			}
		}
		// The integer part fits, so the term is below lim+unit: at most a little over
		// MaxInt64 only when lim is MaxInt64 itself, which time.ParseDuration reports.
		v, err := time.ParseDuration(num + goUnit)
		if err != nil {
			return 0, overLimit(s, limit)
		}
		tv := int64(v)
		if unitText == "d" {
			if tv > lim/24 {
				return 0, overLimit(s, limit)
			}
			tv *= 24
		}
		if tv > lim-total {
			return 0, overLimit(s, limit)
		}
		total += tv
	}
	return Duration(total), nil
}

// parseSlurmTime reads "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM" and "D-HH:MM:SS".
// Fields are not range-checked ("90:00" is 90 minutes, as Slurm reads it).
func parseSlurmTime(s string, limit Duration) (Duration, error) {
	days, rest, hasDays := strings.Cut(s, "-")
	if hasDays && days == "" {
		return 0, badDuration(s)
	}
	parts := strings.Split(rest, ":")
	if !hasDays {
		parts = strings.Split(s, ":")
	}
	for _, p := range parts {
		if !allDigits(p) {
			return 0, badDuration(s)
		}
	}
	var units []time.Duration
	switch {
	case hasDays && len(parts) <= 3:
		// D-HH, D-HH:MM, D-HH:MM:SS
		units = []time.Duration{time.Hour, time.Minute, time.Second}[:len(parts)]
	case !hasDays && len(parts) == 1:
		units = []time.Duration{time.Minute}
	case !hasDays && len(parts) == 2:
		units = []time.Duration{time.Minute, time.Second}
	case !hasDays && len(parts) == 3:
		units = []time.Duration{time.Hour, time.Minute, time.Second}
	default:
		return 0, badDuration(s)
	}
	terms := make([]term, 0, 4)
	if hasDays {
		terms = append(terms, term{days, day})
	}
	for i, p := range parts {
		terms = append(terms, term{p, units[i]})
	}
	return sumChecked(s, limit, terms...)
}
