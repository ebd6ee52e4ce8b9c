package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestNewLoggerFormats: --log-format text writes slog's key=value lines, json one
// JSON object a line; the level follows MOSAIC_LOG_LEVEL; anything else is refused
// with the choices.
func TestNewLoggerFormats(t *testing.T) {
	for _, tc := range []struct {
		format, level string
		wantErr       bool
		check         func(string) bool
	}{
		{"json", "", false, func(s string) bool {
			var m map[string]any
			return json.Unmarshal([]byte(s), &m) == nil && m["msg"] == "hello" && m["k"] == "v" && m["level"] == "INFO"
		}},
		{"JSON", "debug", false, func(s string) bool { return strings.Contains(s, `"level":"DEBUG"`) }},
		{"text", "", false, func(s string) bool { return strings.Contains(s, "level=INFO msg=hello k=v") }},
		{"", "", false, func(s string) bool { return strings.Contains(s, "msg=hello") }},
		{"xml", "", true, nil},
		{"logfmt ", "", true, nil},
	} {
		var buf bytes.Buffer
		log, err := newLogger(&buf, tc.format, tc.level)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "want text or json") {
				t.Errorf("format %q: err %v, want a refusal naming the choices", tc.format, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("format %q: %v", tc.format, err)
		}
		log.Debug("hello", "k", "v")
		log.Info("hello", "k", "v")
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		last := lines[len(lines)-1]
		if tc.level == "debug" {
			last = lines[0]
		}
		if !tc.check(last) {
			t.Errorf("format %q level %q wrote %q", tc.format, tc.level, buf.String())
		}
	}
}

// TestExchangeServeLogFormat: `mosaic exchange serve` takes --log-format (and
// MOSAIC_LOG_FORMAT) like serve, and refuses an unknown format before it listens.
func TestExchangeServeLogFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
	}{
		{"flag", "", []string{"--log-format", "xml"}},
		{"env", "yaml", nil},
		{"flag over env", "json", []string{"--log-format", "logfmt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MOSAIC_LOG_FORMAT", tc.env)
			root := newRootCmd()
			var errOut bytes.Buffer
			root.SetOut(&errOut)
			root.SetErr(&errOut)
			root.SetArgs(append([]string{"exchange", "serve", "--addr", "127.0.0.1:0", "--token", "mxt_x"}, tc.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), "want text or json") {
				t.Fatalf("err %v, want the format refused (output %q)", err, errOut.String())
			}
			if strings.Contains(errOut.String(), "serving run") {
				t.Errorf("it listened before refusing: %q", errOut.String())
			}
		})
	}
}
