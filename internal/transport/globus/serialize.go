package globus

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Serialization strategy identifiers (globus/globus-compute
// compute_sdk/globus_compute_sdk/serialize/concretes.py).
const (
	// JSONDataID prefixes JSON data (JSONData.identifier "11\n").
	JSONDataID = "11\n"
	// PureSourceTextInspectID prefixes pure-source code (PureSourceTextInspect.identifier "st\n").
	PureSourceTextInspectID = "st\n"
	// JSONDataPath is what result_serializers names to get JSON results back
	// (sdk/client.py create_batch result_serializers: import paths of strategies).
	JSONDataPath = "globus_compute_sdk.serialize.JSONData"
)

// PackBuffers joins buffers as "{len}\n{buf}" each, where len counts characters (Python
// str length, i.e. code points), as serialize/utils.py pack_buffers.
func PackBuffers(bufs ...string) string {
	var b strings.Builder
	for _, s := range bufs {
		b.WriteString(strconv.Itoa(utf8.RuneCountInString(s)))
		b.WriteByte('\n')
		b.WriteString(s)
	}
	return b.String()
}

// UnpackBuffers splits a packed string (serialize/utils.py unpack_buffers), with the
// same errors for a missing delimiter, a bad or negative length, or truncation.
func UnpackBuffers(packed string) ([]string, error) {
	var out []string
	for len(packed) > 0 {
		head, rest, ok := strings.Cut(packed, "\n")
		if !ok {
			return nil, errors.New("packed buffer: missing newline delimiter")
		}
		n, err := strconv.Atoi(head)
		if err != nil {
			return nil, fmt.Errorf("packed buffer: invalid length delimiter %q", head)
		}
		if n < 0 {
			return nil, fmt.Errorf("packed buffer: length delimiter must be non-negative: %d", n)
		}
		// Advance n code points.
		i, count := 0, 0
		for count < n && i < len(rest) {
			_, size := utf8.DecodeRuneInString(rest[i:])
			i += size
			count++
		}
		if count < n {
			return nil, fmt.Errorf("packed buffer: truncated: expected %d characters, only %d remain", n, count)
		}
		out = append(out, rest[:i])
		packed = rest[i:]
	}
	return out, nil
}

// SerializeJSON is JSONData.serialize: "11\n" + json.dumps(v).
func SerializeJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return JSONDataID + string(b), nil
}

// DeserializeJSON is JSONData.deserialize into v; other strategies are refused with a
// message naming the fix (the endpoint must honour result_serializers).
func DeserializeJSON(payload string, v any) error {
	body, ok := strings.CutPrefix(payload, JSONDataID)
	if !ok {
		id := payload
		if i := strings.IndexByte(id, '\n'); i >= 0 {
			id = id[:i]
		}
		if len(id) > 4 {
			id = id[:4]
		}
		return fmt.Errorf("result uses serialization strategy %q, not JSONData (11); the endpoint must allow JSONData results (allowed_serializers)", id)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return fmt.Errorf("JSONData result: %w", err)
	}
	return nil
}

// PureSource is PureSourceTextInspect.serialize for a function called name with
// source text src: "st\n" + base64(name + ":" + src), the base64 in lines of 76
// characters each ending in a newline, as Python's codecs.encode(..., "base64").
func PureSource(name, src string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(name + ":" + src))
	var b strings.Builder
	b.WriteString(PureSourceTextInspectID)
	for len(enc) > 76 {
		b.WriteString(enc[:76])
		b.WriteByte('\n')
		enc = enc[76:]
	}
	b.WriteString(enc)
	b.WriteByte('\n')
	return b.String()
}

// ParsePureSource is PureSourceTextInspect.deserialize's decoding half: it returns the
// function name and source (accepting the older un-encoded form too).
func ParsePureSource(payload string) (name, src string, err error) {
	body, ok := strings.CutPrefix(payload, PureSourceTextInspectID)
	if !ok {
		return "", "", errors.New("not a PureSourceTextInspect (st) payload")
	}
	if dec, derr := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), "")); derr == nil {
		body = string(dec)
	}
	name, src, ok = strings.Cut(body, ":")
	if !ok || name == "" {
		return "", "", errors.New("PureSourceTextInspect payload has no name:source separator")
	}
	return name, src, nil
}

// TaskPayload packs positional args and kwargs as Batch.add does:
// pack_buffers([serialize(args), serialize(kwargs)]) with JSONData.
func TaskPayload(args []any, kwargs map[string]any) (string, error) {
	if args == nil {
		args = []any{}
	}
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	a, err := SerializeJSON(args)
	if err != nil {
		return "", err
	}
	k, err := SerializeJSON(kwargs)
	if err != nil {
		return "", err
	}
	return PackBuffers(a, k), nil
}

// ParseTaskPayload reverses TaskPayload (used by the fake endpoint).
func ParseTaskPayload(payload string) (args []json.RawMessage, kwargs map[string]json.RawMessage, err error) {
	bufs, err := UnpackBuffers(payload)
	if err != nil {
		return nil, nil, err
	}
	if len(bufs) != 2 {
		return nil, nil, fmt.Errorf("task payload: want 2 buffers (args, kwargs), got %d", len(bufs))
	}
	if err := DeserializeJSON(bufs[0], &args); err != nil {
		return nil, nil, fmt.Errorf("task args: %w", err)
	}
	if err := DeserializeJSON(bufs[1], &kwargs); err != nil {
		return nil, nil, fmt.Errorf("task kwargs: %w", err)
	}
	return args, kwargs, nil
}
