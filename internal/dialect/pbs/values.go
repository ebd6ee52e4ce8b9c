package pbs

import (
	"fmt"
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
// "MM:SS", plain seconds, with an optional fraction on the seconds.
func ParseWalltime(s string) (model.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("walltime: empty")
	}
	parts := strings.Split(t, ":")
	if len(parts) > 3 {
		return 0, fmt.Errorf("walltime %q: want [[HH:]MM:]SS", s)
	}
	var total float64
	for i, p := range parts {
		if i < len(parts)-1 {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("walltime %q: want [[HH:]MM:]SS", s)
			}
			total = total*60 + float64(n)
			continue
		}
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || strings.ContainsAny(p, "eEnN+") {
			return 0, fmt.Errorf("walltime %q: want [[HH:]MM:]SS", s)
		}
		total = total*60 + f
	}
	return model.Duration(time.Duration(total * float64(time.Second))), nil
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
