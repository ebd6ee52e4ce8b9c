package sim

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// swfFields is the number of fields of a Standard Workload Format v2 record.
const swfFields = 18

// maxSWFLine bounds one line of an SWF file.
const maxSWFLine = 64 * 1024

// swfFieldNames names the 18 SWF fields for error messages (1-based order).
var swfFieldNames = [swfFields]string{
	"job number", "submit time", "wait time", "run time", "allocated processors",
	"average cpu time", "used memory", "requested processors", "requested time",
	"requested memory", "status", "user id", "group id", "executable number",
	"queue number", "partition number", "preceding job", "think time",
}

// SWFJob is one record of a Standard Workload Format file. Times are in seconds;
// -1 means unknown, as in the file.
type SWFJob struct {
	ID        int64
	Submit    int64 // seconds since the log's start
	Wait      int64
	Run       int64
	Procs     int // allocated processors
	AvgCPU    float64
	UsedMem   float64 // KB per processor
	ReqProcs  int
	ReqTime   int64
	ReqMem    float64
	Status    int
	User      int
	Group     int
	Exe       int
	Queue     int
	Partition int
	Preceding int64
	Think     int64
}

// Size is the job's processor count: allocated, else requested, else -1.
func (j SWFJob) Size() int {
	if j.Procs > 0 {
		return j.Procs
	}
	if j.ReqProcs > 0 {
		return j.ReqProcs
	}
	return -1
}

// Trace is a parsed SWF file.
type Trace struct {
	// MaxNodes and MaxProcs come from the "; MaxNodes:" and "; MaxProcs:" header
	// lines; 0 when absent.
	MaxNodes  int
	MaxProcs  int
	UnixStart int64 // "; UnixStartTime:", 0 when absent
	Jobs      []SWFJob
}

// MachineSize is the processor count job sizes are relative to: MaxProcs, else
// MaxNodes, else the largest job in the trace (at least 1).
func (t *Trace) MachineSize() int {
	if t.MaxProcs > 0 {
		return t.MaxProcs
	}
	if t.MaxNodes > 0 {
		return t.MaxNodes
	}
	m := 1
	for _, j := range t.Jobs {
		if s := j.Size(); s > m {
			m = s
		}
	}
	return m
}

// ReadSWF reads an SWF file, plain or gzip-compressed (detected by its magic bytes).
func ReadSWF(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open workload trace: %w (check sim.load.trace in the catalog)", err)
	}
	defer f.Close()
	t, err := ParseSWF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseSWF parses Standard Workload Format v2 from r, which may be gzip-compressed.
// Comment lines start with ';'; blank lines are skipped; every other line must have
// exactly 18 numeric fields. Errors name the line and the field.
func ParseSWF(r io.Reader) (*Trace, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("swf: gzip header: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	t := &Trace{}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 4096), maxSWFLine)
	line := 0
	var fields [swfFields]float64
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if text[0] == ';' {
			if err := t.parseHeader(string(text[1:]), line); err != nil {
				return nil, err
			}
			continue
		}
		parts := strings.Fields(string(text))
		if len(parts) != swfFields {
			return nil, fmt.Errorf("swf line %d: want %d whitespace-separated fields, got %d", line, swfFields, len(parts))
		}
		for i, p := range parts {
			v, err := parseSWFNumber(p)
			if err != nil {
				return nil, fmt.Errorf("swf line %d field %d (%s): %w", line, i+1, swfFieldNames[i], err)
			}
			fields[i] = v
		}
		t.Jobs = append(t.Jobs, SWFJob{
			ID: int64(fields[0]), Submit: int64(fields[1]), Wait: int64(fields[2]), Run: int64(fields[3]),
			Procs: int(fields[4]), AvgCPU: fields[5], UsedMem: fields[6], ReqProcs: int(fields[7]),
			ReqTime: int64(fields[8]), ReqMem: fields[9], Status: int(fields[10]), User: int(fields[11]),
			Group: int(fields[12]), Exe: int(fields[13]), Queue: int(fields[14]), Partition: int(fields[15]),
			Preceding: int64(fields[16]), Think: int64(fields[17]),
		})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("swf line %d: line longer than %d bytes", line+1, maxSWFLine)
		}
		return nil, fmt.Errorf("swf: read after line %d: %w", line, err)
	}
	return t, nil
}

// swfLimit bounds numbers so conversions to int64/int cannot overflow.
const swfLimit = 1e15

func parseSWFNumber(s string) (float64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > swfLimit || n < -swfLimit {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return float64(n), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v > swfLimit || v < -swfLimit {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return v, nil
}

// parseHeader reads the header keys the model uses; other comments are ignored.
func (t *Trace) parseHeader(s string, line int) error {
	key, val, ok := strings.Cut(s, ":")
	if !ok {
		return nil
	}
	key = strings.TrimSpace(key)
	val = strings.TrimSpace(val)
	var dst *int
	switch key {
	case "MaxNodes":
		dst = &t.MaxNodes
	case "MaxProcs":
		dst = &t.MaxProcs
	case "UnixStartTime":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return fmt.Errorf("swf line %d: header UnixStartTime %q is not an integer", line, val)
		}
		t.UnixStart = n
		return nil
	default:
		return nil
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 0 || n > 1<<30 {
		return fmt.Errorf("swf line %d: header %s %q is not a non-negative integer", line, key, val)
	}
	*dst = n
	return nil
}
