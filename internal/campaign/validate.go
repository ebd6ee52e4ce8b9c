package campaign

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Mode selects how much of the campaign must be present in the spec.
type Mode int

const (
	// Strict validates a whole campaign run on one machine: the initial agent and
	// every peer must be declared in the spec.
	Strict Mode = iota
	// Federated validates one site's slice: the initial agent and peers may live
	// in another site's slice and are found through the exchange at run time.
	// Intra-slice checks (duplicates, self-peer, commands) still apply.
	Federated
)

// String returns "strict" or "federated".
func (m Mode) String() string {
	if m == Federated {
		return "federated"
	}
	return "strict"
}

// MaxAgentNameLen bounds agent names (they travel in ids, env vars and paths).
const MaxAgentNameLen = 128

// ValidateName checks that an agent name is usable in ids, env and file names:
// letters, digits, '-', '_', '.', not starting with '.' or '-'.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("agent name is empty")
	}
	if len(name) > MaxAgentNameLen {
		return fmt.Errorf("agent name %.20q... is longer than %d characters", name, MaxAgentNameLen)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' ||
			(i > 0 && (r == '-' || r == '.'))
		if !ok {
			return fmt.Errorf("agent name %q: use letters, digits, '_', '-' and '.' (not first)", name)
		}
	}
	return nil
}

// Validate checks the spec and returns every problem found (errors.Join of
// *SpecError, each naming file and line), or nil.
func (s *Spec) Validate(mode Mode) error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, &SpecError{File: s.file(), Line: s.pos.line(path), Msg: fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(s.Name) == "" {
		add("name", "campaign name is empty; set \"name\"")
	}
	if len(s.Agents) == 0 {
		add("agents", "campaign declares no agents; add at least one to \"agents\"")
	}
	declared := map[string]int{}
	for i, a := range s.Agents {
		p := s.agentPath(i)
		if err := ValidateName(a.Name); err != nil {
			add(p+".name", "agents[%d]: %v", s.origIndex(i), err)
		} else if first, dup := declared[a.Name]; dup {
			add(p+".name", "agent %q is declared twice (first as agents[%d]); names must be unique", a.Name, s.origIndex(first))
		} else {
			declared[a.Name] = i
		}
		if len(a.Command) == 0 || strings.TrimSpace(a.Command[0]) == "" {
			add(p+".command", "agent %q has no command; set \"command\" to an argv list such as [\"python3\", \"agent.py\"]", a.Name)
		}
		for k := range a.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				add(p+".env", "agent %q: environment variable name %q is invalid", a.Name, k)
			}
		}
		switch a.Protocol {
		case "", model.ProtocolMosaic, model.ProtocolAcademy:
		default:
			add(p+".protocol", "agent %q: protocol %q is unknown; use \"academy\" (a Python Academy agent that registers its mailbox itself) or \"mosaic\" (the default: wrapped by mosaic, messages on stdin and fd 3)", a.Name, a.Protocol)
		}
		if a.Envelope != nil {
			env := *a.Envelope
			env.Normalize()
			if err := env.Validate(); err != nil {
				add(p+".envelope", "agent %q: envelope: %v", a.Name, err)
			}
		}
	}
	for i, a := range s.Agents {
		p := s.agentPath(i)
		seen := map[string]bool{}
		for j, peer := range a.AllowedPeers {
			pp := fmt.Sprintf("%s.allowed_peers.%d", p, j)
			switch {
			case peer == a.Name:
				add(pp, "agent %q lists itself in allowed_peers; an agent messaging itself would loop", a.Name)
			case seen[peer]:
				add(pp, "agent %q lists peer %q twice in allowed_peers", a.Name, peer)
			case ValidateName(peer) != nil:
				add(pp, "agent %q: allowed peer: %v", a.Name, ValidateName(peer))
			case mode == Strict:
				if _, ok := declared[peer]; !ok {
					add(pp, "agent %q allows peer %q, which is not declared in this campaign (declared: %s)", a.Name, peer, strings.Join(s.Names(), ", "))
				}
			}
			seen[peer] = true
		}
	}
	switch {
	case strings.TrimSpace(s.InitialAgent) == "":
		add("initial_agent", "initial_agent is empty; name the agent that receives the user task")
	case mode == Strict:
		if _, ok := declared[s.InitialAgent]; !ok {
			add("initial_agent", "initial_agent %q is not declared in this campaign (declared: %s)", s.InitialAgent, strings.Join(s.Names(), ", "))
		}
	default:
		if err := ValidateName(s.InitialAgent); err != nil {
			add("initial_agent", "initial_agent: %v", err)
		}
	}
	if s.BootstrapAction != "" {
		academy := slices.ContainsFunc(s.Agents, func(a model.CampaignAgent) bool { return a.Protocol == model.ProtocolAcademy })
		switch {
		case !isIdentifier(s.BootstrapAction):
			add("bootstrap_action", "bootstrap_action %q is not an action name; use a Python identifier such as %q (the @action method of the Academy initial agent)", s.BootstrapAction, model.DefaultBootstrapAction)
		case mode == Strict && !academy:
			add("bootstrap_action", "bootstrap_action %q has no effect: no agent is declared \"protocol\": \"academy\" (Mosaic-wrapped agents get the task as a plain message); remove it or mark the Academy agent", s.BootstrapAction)
		}
	}
	s.validateExchange(add)
	return errors.Join(errs...)
}

// isIdentifier reports whether s is an ASCII Python identifier (an @action
// method name): a letter or '_', then letters, digits or '_', at most 128 bytes.
func isIdentifier(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || (i > 0 && r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// IsAcademy reports whether agent name is declared as a Python Academy agent.
func (s *Spec) IsAcademy(name string) bool {
	a, ok := s.Agent(name)
	return ok && a.Protocol == model.ProtocolAcademy
}

// BootstrapActionName is the action an Academy initial agent gets the user
// task with (bootstrap_action, default model.DefaultBootstrapAction).
func (s *Spec) BootstrapActionName() string {
	if s.BootstrapAction != "" {
		return s.BootstrapAction
	}
	return model.DefaultBootstrapAction
}

func (s *Spec) validateExchange(add func(path, format string, args ...any)) {
	x := s.Exchange
	switch x.Backend {
	case "", model.ExchangeBackendMemory:
	case model.ExchangeBackendRedis:
		if x.RedisURL == "" && x.URL == "" {
			add("exchange.backend", "exchange backend \"redis\" needs \"redis_url\" (e.g. redis://127.0.0.1:6379/0)")
		}
	default:
		add("exchange.backend", "exchange backend %q is unknown; use \"memory\" or \"redis\"", x.Backend)
	}
	if x.URL != "" {
		if u, err := url.Parse(x.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("exchange.url", "exchange url %q is not an http(s) URL", x.URL)
		}
	}
	if x.RedisURL != "" {
		if u, err := url.Parse(x.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
			add("exchange.redis_url", "exchange redis_url %q is not a redis:// URL", x.RedisURL)
		}
	}
	if x.MaxMessageBytes < 0 {
		add("exchange.max_message_bytes", "exchange max_message_bytes is negative")
	}
	if x.DiscoverTimeout < 0 {
		add("exchange.discover_timeout", "exchange discover_timeout is negative")
	}
}

// Names returns the agent names in declaration order.
func (s *Spec) Names() []string {
	out := make([]string, len(s.Agents))
	for i, a := range s.Agents {
		out[i] = a.Name
	}
	return out
}

// Agent returns the named agent of the spec.
func (s *Spec) Agent(name string) (model.CampaignAgent, bool) {
	for _, a := range s.Agents {
		if a.Name == name {
			return a, true
		}
	}
	return model.CampaignAgent{}, false
}

func (s *Spec) file() string {
	if s.Path == "" {
		return "<campaign>"
	}
	return s.Path
}

// origIndex maps an index in a (possibly sliced) spec to the index in the file.
func (s *Spec) origIndex(i int) int {
	if s.orig != nil && i < len(s.orig) {
		return s.orig[i]
	}
	return i
}

func (s *Spec) agentPath(i int) string { return fmt.Sprintf("agents.%d", s.origIndex(i)) }
