package hpc

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/connect"
)

// OwnerLookup says which Mosaic user owns jobs, by job id on a system or by tag
// (the core answers from its store: each attempt's task's owner). With one, a
// provider whose catalog entry lists users: runs every call about a job under its
// owner's site identity (site.System.IdentityFor): their ssh login and key, and their
// account at submission; monitoring (squeue/sacct/qstat), cancels and log reads of
// their jobs too, so a site that shows a user only their own jobs still answers.
type OwnerLookup interface {
	JobOwners(ctx context.Context, system string, jobIDs []string) (map[string]string, error)
	TagOwners(ctx context.Context, tags []string) (map[string]string, error)
}

// WithOwners routes job calls to their owners' identities (see OwnerLookup). Without
// it, or for a system without users:, every call uses the system's own identity.
func WithOwners(l OwnerLookup) Option { return func(p *Provider) { p.owners = l } }

// perUser reports whether calls are routed by owner.
func (p *Provider) perUser() bool { return p.owners != nil && len(p.sys.Users) > 0 }

// forOwner returns the provider that acts as owner: p itself for the shared
// identity, else one built (once) from the system as the owner's identity sees it.
func (p *Provider) forOwner(owner string) (*Provider, error) {
	id, err := p.sys.IdentityFor(owner)
	if err != nil {
		return nil, err
	}
	if id.Shared {
		return p, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if sub, ok := p.subs[owner]; ok {
		return sub, nil
	}
	if id.IdentityFile != "" {
		if _, err := os.Stat(expandHome(id.IdentityFile)); err != nil {
			return nil, fmt.Errorf("%s: the ssh key of %s (%s) cannot be read: %w; fix the identity of %s under users: in sites.yaml",
				p.sys.Name, owner, id.IdentityFile, err, owner)
		}
	}
	sys := p.sys.WithIdentity(id)
	sub := &Provider{sys: sys, kind: p.kind, now: p.now, log: p.log.With("owner", owner), user: sys.User,
		protected: p.protected, conn: p.conn, d: p.d, endpoint: connect.Endpoint(sys), limitsOnly: p.limitsOnly,
		submitted: p.submitted}
	tr, err := connect.New(sys, p.conn)
	if err != nil {
		return nil, fmt.Errorf("%s: the site identity of %s: %w", p.sys.Name, owner, err)
	}
	if s, ok := tr.(*transport.SSH); ok {
		// A control master of its own: ssh's %C names the login, not the key, so two
		// users mapped to one login would otherwise share the first one's connection.
		s.ControlDir = filepath.Join(cmp.Or(s.ControlDir, transport.DefaultControlDir()), "u-"+owner)
		if id.IdentityFile != "" {
			// Only the user's key: never the agent's or the ssh config's (the service's).
			s.IdentitiesOnly, s.NoAgent = true, true
		}
	}
	sub.tr = tr
	if p.subs == nil {
		p.subs = map[string]*Provider{}
	}
	p.subs[owner] = sub
	return sub, nil
}

// expandHome resolves a leading ~/ as ssh does.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// groupByOwner splits keys (job ids or tags) by the provider of their owner; keys
// whose owner is unknown (not Mosaic's, or older than users) go to p. A key whose
// owner has no identity here is left out with its error in failed, so one such job
// does not stop the calls about everyone else's.
func (p *Provider) groupByOwner(keys []string, owners map[string]string) (groups map[*Provider][]string, failed map[string]error) {
	groups = map[*Provider][]string{}
	for _, k := range keys {
		q, err := p.forOwner(owners[k])
		if err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[k] = err
			continue
		}
		groups[q] = append(groups[q], k)
	}
	return groups, failed
}

// byJobs groups job ids by the provider that acts for their owner; failed holds the
// ids whose owner has no identity here.
func (p *Provider) byJobs(ctx context.Context, ids []string) (map[*Provider][]string, map[string]error, error) {
	if !p.perUser() {
		return map[*Provider][]string{p: ids}, nil, nil
	}
	owners, err := p.owners.JobOwners(ctx, p.sys.Name, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: whose jobs %s are: %w", p.sys.Name, strings.Join(ids, ","), err)
	}
	g, failed := p.groupByOwner(ids, owners)
	return g, failed, nil
}

// byTags groups tags by the provider that acts for their owner.
func (p *Provider) byTags(ctx context.Context, tags []string) (map[*Provider][]string, map[string]error, error) {
	if !p.perUser() {
		return map[*Provider][]string{p: tags}, nil, nil
	}
	owners, err := p.owners.TagOwners(ctx, tags)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: whose jobs %s are: %w", p.sys.Name, strings.Join(tags, ","), err)
	}
	g, failed := p.groupByOwner(tags, owners)
	return g, failed, nil
}

// forJob is the provider acting for one job's owner.
func (p *Provider) forJob(ctx context.Context, id string) (*Provider, error) {
	g, failed, err := p.byJobs(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if err := failed[id]; err != nil {
		return nil, err
	}
	for q := range g {
		return q, nil
	}
	return p, nil
}

// forTag is the provider acting for the owner of the job tagged tag.
func (p *Provider) forTag(ctx context.Context, tag string) (*Provider, error) {
	g, failed, err := p.byTags(ctx, []string{tag})
	if err != nil {
		return nil, err
	}
	if err := failed[tag]; err != nil {
		return nil, err
	}
	for q := range g {
		return q, nil
	}
	return p, nil
}

// eachOwner calls fn once per owner's provider with that owner's keys (job ids, or
// tags with byTags), when calls are routed by owner; routed is false otherwise (the
// caller then acts as the system's own identity). fn must call the provider's
// unrouted implementation. Keys whose owner has no identity here are not asked
// about: err is then a *provider.PartialError naming them (after fn ran for the rest).
func (p *Provider) eachOwner(ctx context.Context, keys []string, group func(context.Context, []string) (map[*Provider][]string, map[string]error, error),
	fn func(q *Provider, keys []string) error) (routed bool, err error) {
	if !p.perUser() {
		return false, nil
	}
	groups, failed, err := group(ctx, keys)
	if err != nil {
		return true, err
	}
	for q, ks := range groups {
		if err := fn(q, ks); err != nil {
			return true, err
		}
	}
	if len(failed) > 0 {
		return true, &provider.PartialError{System: p.sys.Name, Failed: failed}
	}
	return true, nil
}

// tagOfOutput is the tag in a Mosaic output file name (<dir>/mosaic-<task>-<n>.out).
func tagOfOutput(file string) string {
	base := path.Base(file)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".out"), ".err")
}

// userAccount is the account a job of this (per-user) provider charges: the
// placement's when it is one of the user's, else the user's first (placement ranks
// the system's accounts; the user's own are applied here).
func (p *Provider) userAccount(acct string) string {
	if len(p.sys.Accounts) == 0 || slices.Contains(p.sys.Accounts, acct) {
		return acct
	}
	return p.sys.Accounts[0]
}

// Identity names who p acts as, for messages and tests: user@host or host.
func (p *Provider) Identity() string { return p.endpoint }

// ForOwner is the provider acting for owner (p itself for the shared identity): what
// every job call of owner's goes through. Errors wrap site.ErrNoIdentity when the
// catalog gives owner no identity here.
func (p *Provider) ForOwner(owner string) (*Provider, error) { return p.forOwner(owner) }
