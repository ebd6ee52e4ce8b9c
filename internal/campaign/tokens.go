package campaign

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mosaic-hpc/mosaic/agent"
)

// SliceTokens derives the exchange token of each named agent of run from tok,
// the run's operator token (an agent token is kept as it is: it opens only
// its own agent's mailbox).
func SliceTokens(tok, runID string, names []string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[n] = agent.TokenFor(tok, runID, n)
	}
	return out
}

// FormatTokens renders a site's tokens file: one "NAME TOKEN" line per agent,
// in the order of names.
func FormatTokens(toks map[string]string, names []string) string {
	var b strings.Builder
	for _, n := range names {
		if t, ok := toks[n]; ok {
			fmt.Fprintf(&b, "%s %s\n", n, t)
		}
	}
	return b.String()
}

// ParseTokens reads a tokens file written by FormatTokens.
func ParseTokens(text string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for i := 1; sc.Scan(); i++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || ValidateName(f[0]) != nil || !agent.IsAgentToken(f[1]) {
			return nil, fmt.Errorf("line %d is not \"AGENT %sTOKEN\"", i, agent.AgentTokenPrefix)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("line %d: agent %s is listed twice", i, f[0])
		}
		out[f[0]] = f[1]
	}
	return out, sc.Err()
}

// ReadTokensFile reads a tokens file, refusing one that other users can read
// (it holds credentials: chmod 600 it).
func ReadTokensFile(path string) (map[string]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("tokens file %s is readable by other users (mode %s); chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	toks, err := ParseTokens(string(data))
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return toks, nil
}

// AgentTokens returns the tokens of the named agents: from tokens (a tokens
// file's content) when given, else derived from tok (MOSAIC_EXCHANGE_TOKEN).
// Every agent must get one.
func AgentTokens(tokens map[string]string, tok, runID string, names []string) (map[string]string, error) {
	if tokens == nil {
		if tok == "" {
			return nil, fmt.Errorf("no exchange credential: pass --tokens-file or export %s (the run token, or the agent's own token)", agent.EnvExchangeToken)
		}
		tokens = SliceTokens(tok, runID, names)
	}
	var missing []string
	for _, n := range names {
		if tokens[n] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, errors.New("no exchange token for agent(s) " + strings.Join(missing, ", ") + " in the tokens file")
	}
	return tokens, nil
}
