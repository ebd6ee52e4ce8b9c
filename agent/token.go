package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/google/uuid"
)

// AgentTokenPrefix starts every per-agent exchange token. Run (operator)
// tokens never start with it.
const AgentTokenPrefix = "mxa_"

// agentTokenContext separates agent-token MACs from any other use of the key.
const agentTokenContext = "mosaic-exchange-agent-v1\x00"

// AgentToken derives the exchange credential of one agent of a run from the
// run's operator token: "mxa_" + hex(HMAC-SHA256(key = operator token,
// "mosaic-exchange-agent-v1\x00" + run + "\x00" + uid)). The exchange computes
// the same value when it knows the operator token and the run's campaign, so a
// launcher and an external exchange agree without a new endpoint. An agent
// token opens only that agent's mailbox; it cannot be turned back into the
// operator token or into another agent's token.
func AgentToken(operatorToken, runID string, uid uuid.UUID) string {
	m := hmac.New(sha256.New, []byte(operatorToken))
	m.Write([]byte(agentTokenContext + runID + "\x00" + uid.String()))
	return AgentTokenPrefix + hex.EncodeToString(m.Sum(nil))
}

// IsAgentToken reports whether tok is a per-agent token (by its prefix).
func IsAgentToken(tok string) bool { return strings.HasPrefix(tok, AgentTokenPrefix) }

// TokenFor returns the credential agent name of run must use given tok, the
// MOSAIC_EXCHANGE_TOKEN it was started with: an agent token is used as it is,
// an operator token yields the derived agent token.
func TokenFor(tok, runID, name string) string {
	if tok == "" || IsAgentToken(tok) {
		return tok
	}
	return AgentToken(tok, runID, UID(runID, name))
}
