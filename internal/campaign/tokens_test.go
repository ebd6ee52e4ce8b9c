package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/agent"
)

func TestTokensFile(t *testing.T) {
	toks := SliceTokens("mxt_run", "r1", []string{"b", "a"})
	if toks["a"] != agent.AgentToken("mxt_run", "r1", AgentUID("r1", "a")) || toks["a"] == toks["b"] {
		t.Fatalf("tokens %v", toks)
	}
	text := FormatTokens(toks, []string{"b", "a"})
	if !strings.HasPrefix(text, "b mxa_") || strings.Contains(text, "mxt_run") {
		t.Fatalf("file %q", text)
	}
	back, err := ParseTokens(text)
	if err != nil || back["a"] != toks["a"] || back["b"] != toks["b"] || len(back) != 2 {
		t.Fatalf("round trip %v %v", back, err)
	}
	for name, bad := range map[string]string{
		"one field":       "a\n",
		"three fields":    "a mxa_x extra\n",
		"run token":       "a mxt_run\n",
		"bad name":        "a/b mxa_x\n",
		"twice":           "a mxa_x\na mxa_y\n",
		"control in name": "a\x01 mxa_x\n",
	} {
		if _, err := ParseTokens(bad); err == nil {
			t.Errorf("%s: %q accepted", name, bad)
		}
	}
	if got, err := ParseTokens("# comment\n\na mxa_x\n"); err != nil || got["a"] != "mxa_x" {
		t.Errorf("comments and blank lines: %v %v", got, err)
	}
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokensFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable tokens file: %v", err)
	}
	_ = os.Chmod(p, 0o600)
	if got, err := ReadTokensFile(p); err != nil || got["b"] != toks["b"] {
		t.Errorf("0600 tokens file: %v %v", got, err)
	}
	if _, err := AgentTokens(map[string]string{"a": "mxa_x"}, "", "r1", []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "b") {
		t.Errorf("missing agent: %v", err)
	}
	if got, err := AgentTokens(nil, "mxt_run", "r1", []string{"a"}); err != nil || got["a"] != toks["a"] {
		t.Errorf("derived: %v %v", got, err)
	}
	if _, err := AgentTokens(nil, "", "r1", []string{"a"}); err == nil {
		t.Error("no credential accepted")
	}
}
