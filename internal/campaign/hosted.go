package campaign

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Academy's hosted exchange as an exchange type ("academy"): an external
// Academy-protocol exchange that authenticates every request with the user's
// Globus access token for the exchange's scope. It has no runs, no Mosaic
// tokens and no campaign policy: the launcher, spawn-site, `agent run` and
// bootstrap all send that one bearer; agents still find each other by their
// deterministic uids (AgentUID).
//
// Facts from academy-agents/academy (v0.5.x), academy/exchange/cloud/:
// client.py DEFAULT_EXCHANGE_URL (below) and HttpExchangeFactory, which sends
// login.py get_auth_headers' "Authorization: Bearer <token>" on every route;
// scopes.py for the scope and resource server (internal/auth
// AcademyExchangeScope); authenticate.py: 401 without a well-formed bearer,
// 403 for an inactive token or one of another audience.

// DefaultAcademyExchangeURL is Academy's hosted exchange
// (academy/exchange/cloud/client.py DEFAULT_EXCHANGE_URL).
const DefaultAcademyExchangeURL = "https://exchange.academy-agents.org/v1"

// NormalizeExchangeType maps an exchange type as written (file or
// --exchange-type) to model.ExchangeTypeMosaic or model.ExchangeTypeAcademy:
// "" and "mosaic" are Mosaic's own exchange; "academy" and "http" (the seed's
// --exchange-type http) Academy's Globus-authenticated one.
func NormalizeExchangeType(t string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "", model.ExchangeTypeMosaic:
		return model.ExchangeTypeMosaic, nil
	case model.ExchangeTypeAcademy, "http":
		return model.ExchangeTypeAcademy, nil
	}
	return "", fmt.Errorf("exchange type %q is not known: use mosaic (Mosaic's own exchange, the default) or academy (Academy's hosted exchange with a Globus token; http is the same)", t)
}

// ApplyExchangeType sets the campaign's exchange type from flag (--exchange-type;
// "" keeps the file's) and checks the settings of that type.
func ApplyExchangeType(s *Spec, flag string) error {
	t := s.Exchange.Type
	if flag != "" {
		t = flag
	}
	n, err := NormalizeExchangeType(t)
	if err != nil {
		return err
	}
	s.Exchange.Type = n
	if n != model.ExchangeTypeAcademy {
		if s.Exchange.Scope != "" || s.Exchange.ResourceServer != "" {
			return fmt.Errorf("%s: exchange.scope and exchange.resource_server apply to exchange type academy only (this campaign's is %s)", s.file(), n)
		}
		return nil
	}
	if s.Exchange.Backend == model.ExchangeBackendRedis || s.Exchange.RedisURL != "" {
		// (backend "memory", the default, is harmless and left as written)
		return fmt.Errorf("%s: exchange.backend redis and exchange.redis_url are for Mosaic's own exchange; an academy exchange keeps its own state", s.file())
	}
	if _, err := auth.ResourceServerOf(s.Exchange.Scope); s.Exchange.Scope != "" && err != nil && s.Exchange.ResourceServer == "" {
		return fmt.Errorf("%s: exchange.scope: %w; or set exchange.resource_server", s.file(), err)
	}
	if rs := s.Exchange.ResourceServer; rs != "" && !tokenChars(rs) {
		return fmt.Errorf("%s: exchange.resource_server %q is not a Globus resource server name", s.file(), rs)
	}
	return nil
}

// IsAcademy reports whether the campaign uses an academy exchange.
func IsAcademy(s *Spec) bool {
	if s == nil {
		return false
	}
	t, _ := NormalizeExchangeType(s.Exchange.Type)
	return t == model.ExchangeTypeAcademy
}

// AcademyScope returns the Globus scope an academy exchange wants and its
// resource server (the campaign's exchange.scope/resource_server, else the
// hosted exchange's).
func AcademyScope(e model.ExchangeSettings) (scope, resourceServer string) {
	scope, resourceServer = e.Scope, e.ResourceServer
	if scope == "" {
		scope = auth.AcademyExchangeScope
	}
	if resourceServer == "" {
		resourceServer, _ = auth.ResourceServerOf(scope)
	}
	return scope, resourceServer
}

// AcademyURL is the exchange URL of an academy campaign: the flag's, else the
// file's, else the hosted exchange.
func AcademyURL(flag string, e model.ExchangeSettings) string {
	switch {
	case flag != "":
		return flag
	case e.URL != "":
		return e.URL
	}
	return DefaultAcademyExchangeURL
}

// TokenSource returns a Globus access token for scope (resource server rs)
// from Mosaic's credential chain, and its expiry (zero when unknown):
// core.Globus.ExchangeBearer.
type TokenSource func(ctx context.Context, scope, rs string) (string, time.Time, error)

// AcademyBearer returns the bearer an academy exchange gets and its expiry
// (zero when unknown): env (an explicit MOSAIC_EXCHANGE_TOKEN) when set, else
// one from src. A Mosaic token in env is refused: the Academy exchange would
// only answer 403.
func AcademyBearer(ctx context.Context, s *Spec, env string, src TokenSource) (string, time.Time, error) {
	scope, rs := AcademyScope(s.Exchange)
	if env != "" {
		if err := checkBearer(env); err != nil {
			return "", time.Time{}, fmt.Errorf("%s: %w", agent.EnvExchangeToken, err)
		}
		return env, time.Time{}, nil
	}
	if src == nil {
		return "", time.Time{}, fmt.Errorf("no Globus token for the Academy exchange (scope %s): run `mosaic login`", scope)
	}
	tok, exp, err := src(ctx, scope, rs)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the Academy exchange's Globus token (scope %s): %w", scope, err)
	}
	if err := checkBearer(tok); err != nil {
		return "", time.Time{}, fmt.Errorf("the Academy exchange: the credential chain's token for %s: %w", rs, err)
	}
	return tok, exp, nil
}

// checkBearer refuses what cannot be a Globus access token: empty, spaces or
// control characters, over 4 KiB, or a Mosaic exchange token (mxa_/mxt_).
func checkBearer(tok string) error {
	switch {
	case tok == "":
		return errors.New("empty token")
	case len(tok) > 4096:
		return errors.New("token longer than 4 KiB")
	case !tokenChars(tok):
		return errors.New("token has spaces or control characters")
	case agent.IsAgentToken(tok) || strings.HasPrefix(tok, "mxt_"):
		return errors.New("this is a Mosaic exchange token, not a Globus access token; unset it (the academy exchange type takes the Globus token from `mosaic login`)")
	}
	return nil
}

// tokenChars reports whether s is printable ASCII without spaces.
func tokenChars(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// HostedTokens gives every named agent the same bearer: the academy exchange
// knows users, not agents.
func HostedTokens(bearer string, names []string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[n] = bearer
	}
	return out
}

// ParseBearerTokens reads a tokens file of an academy campaign: "NAME TOKEN"
// lines like FormatTokens writes, where TOKEN is a Globus access token (never a
// Mosaic token).
func ParseBearerTokens(text string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for i := 1; sc.Scan(); i++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || ValidateName(f[0]) != nil {
			return nil, fmt.Errorf("line %d is not \"AGENT GLOBUS_TOKEN\"", i)
		}
		if err := checkBearer(f[1]); err != nil {
			return nil, fmt.Errorf("line %d (agent %s): %w", i, f[0], err)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("line %d: agent %s is listed twice", i, f[0])
		}
		out[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadBearerTokensFile reads an academy campaign's tokens file, refusing one
// that other users can read.
func ReadBearerTokensFile(path string) (map[string]string, error) {
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
	toks, err := ParseBearerTokens(string(data))
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return toks, nil
}

// CheckAcademyBearer asks the exchange about one mailbox with the bearer the
// client holds: a refused token is said now, with what to do, rather than by
// every agent later.
func CheckAcademyBearer(ctx context.Context, c *agent.Client, s *Spec, runID string) error {
	probe := agent.UserID(OperatorName)
	if len(s.Agents) > 0 {
		probe = agent.AgentID(runID, s.Agents[0].Name)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := c.Status(ctx, probe)
	return AcademyAuthError(c.URL(), s, err)
}

// AcademyAuthError explains an academy exchange's 401/403 (other errors are
// returned as they are).
func AcademyAuthError(url string, s *Spec, err error) error {
	if err == nil {
		return nil
	}
	scope, _ := AcademyScope(s.Exchange)
	var se *agent.StatusError
	if errors.As(err, &se) && se.Code == 403 && strings.Contains(se.Text, "permissions") {
		// academy/exchange/cloud/backend.py: the mailbox exists and belongs to
		// another Globus identity (the token itself is fine).
		return fmt.Errorf("the Academy exchange %s: a mailbox of this run belongs to another Globus identity (%w); use a run id nobody used on this exchange, and the same Globus identity on every site", url, err)
	}
	if errors.Is(err, agent.ErrUnauthorized) || errors.Is(err, agent.ErrForbidden) {
		return fmt.Errorf("the Academy exchange %s refuses the Globus token (%w); run `mosaic login` (it asks for scope %s), or check the campaign's exchange.scope and exchange.resource_server", url, err, scope)
	}
	return fmt.Errorf("the Academy exchange %s: %w", url, err)
}

// sliceTokens are the tokens the site's agents get: each its own token derived
// from the run's (Mosaic exchange), or the user's bearer (academy).
func (x *launchExchange) sliceTokens(runID string, names []string) map[string]string {
	if x.bearer != "" {
		return HostedTokens(x.bearer, names)
	}
	return SliceTokens(x.token, runID, names)
}

// setupAcademy is setupExchange for an academy exchange: no exchange of ours,
// no run token, no policy; the bearer is checked against the exchange first,
// and every site's spawn-site is told the type (the campaign file there may
// not say it when --exchange-type did).
func setupAcademy(ctx context.Context, o *LaunchOptions, x *launchExchange) error {
	u := AcademyURL(o.ExchangeURL, o.Spec.Exchange)
	o.ExchangeURL = u
	x.localURL, x.agentURL = u, u
	if o.AgentExchangeURL != "" {
		x.agentURL = o.AgentExchangeURL
	}
	if err := checkBearer(o.ExchangeToken); err != nil {
		scope, _ := AcademyScope(o.Spec.Exchange)
		return fmt.Errorf("the Academy exchange %s needs a Globus access token for scope %s (%w): run `mosaic login`", u, scope, err)
	}
	x.bearer, x.token = o.ExchangeToken, ""
	var err error
	if x.cl, err = agent.New(x.localURL, x.bearer, agent.WithRequestWindow(5*time.Second)); err != nil {
		return err
	}
	if err := CheckAcademyBearer(ctx, x.cl, o.Spec, o.RunID); err != nil {
		return err
	}
	o.SpawnArgs = append(o.SpawnArgs, "--exchange-type="+model.ExchangeTypeAcademy)
	fmt.Fprintf(o.Out, "exchange: Academy exchange %s (Globus bearer; allowed_peers are not enforced by it)\n", u)
	return nil
}

// childToken is the exchange token a wrapped command gets: its own agent token
// (Mosaic exchange), or none on an academy exchange, whose bearer is the
// user's Globus token and stays in the wrapper (docs/SECURITY.md).
func childToken(r *AgentRun) string {
	if IsAcademy(r.Spec) {
		return ""
	}
	return r.Token
}
