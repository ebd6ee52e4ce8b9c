package pbs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ParseSize reads a PBS size ("527672488kb", "8gb", "0b", "1024mb", "4GB", "10w") into
// bytes. Multipliers are 1024; w is an 8-byte word. A bare number is bytes.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("size: empty")
	}
	unit := int64(1)
	if strings.HasSuffix(t, "w") {
		unit, t = 8, strings.TrimSuffix(t, "w")
	} else {
		t = strings.TrimSuffix(t, "b")
	}
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		case 'p':
			mult = 1 << 50
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want <number>[k|m|g|t|p]b", s)
	}
	return v * mult * unit, nil
}

// ParseWalltime reads PBS durations: "HH:MM:SS" with unbounded hours ("45682:59:56"),
// "MM:SS", plain seconds, with an optional fraction on the seconds. A value that does
// not fit in a time.Duration (about 292 years) is an error, never wrapped around.
func ParseWalltime(s string) (model.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("walltime: empty")
	}
	bad := fmt.Errorf("walltime %q: want [[HH:]MM:]SS", s)
	parts := strings.Split(t, ":")
	if len(parts) > 3 {
		return 0, bad
	}
	const maxSecs = math.MaxInt64 / int64(time.Second)
	var whole int64 // seconds
	frac := time.Duration(0)
	for i, p := range parts {
		digits, fraction, hasFrac := strings.Cut(p, ".")
		if hasFrac && i < len(parts)-1 {
			return 0, bad
		}
		if digits == "" && !(hasFrac && fraction != "") {
			return 0, bad
		}
		for _, c := range digits + fraction {
			if c < '0' || c > '9' {
				return 0, bad
			}
		}
		var n int64
		if digits != "" {
			v, err := strconv.ParseInt(digits, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("walltime %q is too large", s)
			}
			n = v
		}
		if whole > (maxSecs-n)/60 {
			return 0, fmt.Errorf("walltime %q is too large", s)
		}
		whole = whole*60 + n
		if hasFrac {
			if len(fraction) > 9 {
				fraction = fraction[:9]
			}
			f, _ := strconv.ParseInt(fraction+strings.Repeat("0", 9-len(fraction)), 10, 64)
			frac = time.Duration(f)
		}
	}
	if whole >= maxSecs {
		return 0, fmt.Errorf("walltime %q is too large", s)
	}
	return model.Duration(time.Duration(whole)*time.Second + frac), nil
}

// FormatWalltime renders HH:MM:SS with unbounded hours, rounding up to whole seconds.
func FormatWalltime(d model.Duration) string {
	secs := int64((d.D() + time.Second - 1) / time.Second)
	if secs < 0 {
		secs = 0
	}
	return fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs%3600/60, secs%60)
}

// parseCTime reads qstat's ctime(3) timestamps ("Thu Jun 19 10:36:47 2025"), printed
// in the time zone of the machine running qstat.
func parseCTime(s string, loc *time.Location) time.Time {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "UNKNOWN") {
		return time.Time{}
	}
	if loc == nil {
		loc = time.Local
	}
	t, err := time.ParseInLocation(time.ANSIC, s, loc)
	if err != nil {
		return time.Time{}
	}
	return t
}
