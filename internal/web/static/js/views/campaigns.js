// Campaigns: multi-agent runs spread over sites, each with per-site status; one run's
// merged timeline as swimlanes per site with message arrows, cross-site ones labelled.
import { h, s, replace, clock, ago, emptyState, errorBox, stateChip, keepFocus } from '../dom.js';
import * as api from '../api.js';

async function getOrNull(path) {
  try { return await api.get(path); } catch (e) { if (e.status === 404) return null; throw e; }
}

// The campaign API (internal/api/campaigns.go) answers GET /api/campaigns with
// {runs: [{run_id, campaign, state, sites: [name], created, updated}]}, a run with
// {…summary, site_status: [{name, mode, agents, job_id, submitted_job, state, error}],
// counts: [{site, mailboxes, sent, received, cross_site, bytes}]} and a timeline with
// {run_id, source, messages: [{time, src, dest, src_site, dest_site, kind, size,
// cross_site}], counts}. The normalisers also accept the earlier draft shape
// ({campaigns: [{name, sites: [{site, agents, job_id, state}], started_at}]}).
function normSites(x) {
  if (Array.isArray(x.site_status) && x.site_status.length) {
    return x.site_status.map(z => ({ site: z.name, agents: z.agents || [], job_id: z.job_id || z.submitted_job || '', state: z.state, error: z.error, mode: z.mode }));
  }
  return (x.sites || []).map(z => typeof z === 'string' ? { site: z, agents: [], job_id: '', state: '' } : { site: z.site || z.name, agents: z.agents || [], job_id: z.job_id || '', state: z.state });
}

function normRun(x) {
  return { run_id: x.run_id, name: x.name || x.campaign || x.run_id, state: x.state, started: x.started_at || x.created,
    error: x.error, sites: normSites(x), counts: x.counts || [] };
}

function siteBadges(tl, run) {
  if (tl && Array.isArray(tl.sites) && tl.sites.length) return tl.sites.map(z => ({ site: z.site, agents: z.agents, messages: z.messages }));
  const counts = (tl && tl.counts && tl.counts.length ? tl.counts : run.counts) || [];
  if (counts.length) return counts.map(z => ({ site: z.site, agents: z.mailboxes, messages: z.sent }));
  return run.sites.map(z => ({ site: z.site, agents: z.agents.length, messages: 0 }));
}

export async function render(ctx) {
  if (ctx.args[0]) return detail(ctx, ctx.args[0]);
  const { root } = ctx;
  const body = h('div', { id: 'campaign-list' });
  replace(root, h('div', { class: 'view-head' }, h('h1', {}, 'Campaigns'),
    h('p', { class: 'muted' }, 'Federated multi-agent runs: per-site slices, one merged timeline.')), body);
  const load = async () => {
    try {
      const r = await getOrNull('/api/campaigns');
      let list = (r?.runs || r?.campaigns || []).map(normRun);
      if (!list.length) {
        replace(body, emptyState('No campaigns yet.', h('p', { class: 'small' }, 'Start one with ', h('code', {}, 'mosaic campaign launch CAMPAIGN.jsonc --run-id RUN --site SPEC…'), '; its sites, agents and messages appear here.')));
        return;
      }
      // The list names each run's sites; their status comes with the run (newest 20).
      list = await Promise.all(list.map(async (c, i) => {
        if (i >= 20 || c.sites.some(z => z.state)) return c;
        try { const d = await getOrNull(`/api/campaigns/${api.enc(c.run_id)}`); return d ? normRun(d) : c; } catch { return c; }
      }));
      keepFocus(body, () => replace(body, h('div', { class: 'grid' }, list.map(c => h('article', { class: 'card campaign-card' },
        h('div', { class: 'card-head' }, h('h2', {}, h('a', { href: `#/campaigns/${encodeURIComponent(c.run_id)}` }, c.name)),
          stateChip(c.state), h('span', { class: 'age' }, `started ${ago(c.started)}`)),
        h('div', { class: 'muted small mono' }, c.run_id),
        c.error ? h('p', { class: 'error small' }, c.error) : null,
        sitesTable(c.sites))))));
    } catch (e) { replace(body, errorBox(e)); }
  };
  await load();
  ctx.onSnapshot(load);
}

function sitesTable(sites) {
  return h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, ['Site', 'Agents', 'Job', 'State'].map(t => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, sites.map(x => h('tr', {}, h('th', { scope: 'row' }, x.site, x.mode ? h('div', { class: 'muted small' }, x.mode) : null),
      h('td', {}, String(x.agents.length),
        x.agents.length ? h('div', { class: 'muted small mono' }, x.agents.slice(0, 4).join(', ') + (x.agents.length > 4 ? ', …' : '')) : null),
      h('td', { class: 'mono' }, x.job_id || '—'),
      h('td', {}, x.state ? stateChip(x.state) : '—', x.error ? h('div', { class: 'error small' }, x.error) : null))))));
}

async function detail(ctx, runID) {
  const { root } = ctx;
  replace(root, h('p', {}, h('a', { href: '#/campaigns' }, '← Campaigns')), h('p', { class: 'muted' }, 'Loading…'));
  let raw, tl;
  try {
    [raw, tl] = await Promise.all([getOrNull(`/api/campaigns/${api.enc(runID)}`), getOrNull(`/api/campaigns/${api.enc(runID)}/timeline`)]);
  } catch (e) { replace(root, errorBox(e)); return; }
  if (!raw) { replace(root, h('p', {}, h('a', { href: '#/campaigns' }, '← Campaigns')), emptyState(`No campaign run ${runID}.`)); return; }
  const c = normRun(raw);
  const msgs = tl?.messages || [];
  const badges = siteBadges(tl, c);
  const cross = msgs.filter(m => m.cross_site).length;
  replace(root, h('p', {}, h('a', { href: '#/campaigns' }, '← Campaigns')),
    h('div', { class: 'view-head' }, h('h1', {}, c.name), stateChip(c.state), h('span', { class: 'mono muted' }, c.run_id)),
    c.error ? h('p', { class: 'error' }, c.error) : null,
    h('div', { class: 'kv', id: 'sites-badge', 'aria-label': 'Sites' }, badges.map(x => h('span', { class: 'chip' }, h('b', {}, x.site), ` · ${x.agents ?? 0} agents · ${x.messages ?? 0} msgs`)),
      h('span', { class: 'chip warn' }, `${cross} cross-site`)),
    h('p'), sitesTable(c.sites), h('p'),
    h('section', { class: 'card' }, h('h2', {}, 'Timeline'), h('p', { class: 'muted small' }, 'One lane per site; arrows are messages, cross-site ones in amber and labelled.'),
      msgs.length ? h('div', { class: 'table-wrap' }, swimlanes(badges.map(x => x.site), msgs)) : emptyState('No messages exchanged yet.')));
}

/** swimlanes draws one horizontal lane per site and an arrow per message. */
export function swimlanes(sites, msgs) {
  const lane = (v) => v || '(no site)';
  const lanes = [...sites];
  for (const m of msgs) for (const x of [lane(m.src_site), lane(m.dest_site)]) if (!lanes.includes(x)) lanes.push(x);
  const t0 = Math.min(...msgs.map(m => new Date(m.time).getTime())), t1 = Math.max(...msgs.map(m => new Date(m.time).getTime()));
  const labelW = 120, W = 900, laneH = 60, top = 20, H = top + lanes.length * laneH + 24;
  const x = (t) => labelW + 10 + (t1 > t0 ? (new Date(t).getTime() - t0) / (t1 - t0) : 0.5) * (W - labelW - 30);
  const y = (site) => top + lanes.indexOf(lane(site)) * laneH + laneH / 2;
  const svg = s('svg', { class: 'lanes', id: 'swimlanes', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img',
    'aria-label': `${msgs.length} messages between ${lanes.length} sites` },
    s('defs', {}, s('marker', { id: 'arr', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#8fb3ff' })),
    s('marker', { id: 'arrx', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#f0b429' }))));
  lanes.forEach(l => {
    svg.append(s('line', { class: 'lane', x1: labelW, x2: W - 10, y1: y(l), y2: y(l) }));
    svg.append(s('text', { x: labelW - 8, y: y(l) + 4, 'text-anchor': 'end' }, l));
  });
  // Cross-site labels alternate between two rows so neighbours do not collide; one
  // is left out only where arrows are denser than the text (the arrow keeps its colour
  // and its tooltip says cross-site).
  const lastLabel = [-1e9, -1e9];
  let row = 0;
  for (const m of msgs.slice(0, 2000)) {
    const xa = x(m.time), ya = y(m.src_site), yb = y(m.dest_site);
    const same = lane(m.src_site) === lane(m.dest_site);
    const path = same ? `M${xa},${ya} q 8,-18 16,0` : `M${xa},${ya} L${xa + 12},${yb + (yb > ya ? -4 : 4)}`;
    svg.append(s('path', { class: 'arrow' + (m.cross_site ? ' cross' : ''), d: path, 'marker-end': `url(#${m.cross_site ? 'arrx' : 'arr'})` },
      s('title', {}, `${clock(m.time)} ${m.src} → ${m.dest} (${m.kind}, ${m.size} B)${m.cross_site ? ' · cross-site' : ''}`)));
    if (m.cross_site) {
      const r = xa - lastLabel[row] >= 64 ? row : 1 - row;
      if (xa - lastLabel[r] >= 64) {
        const right = xa > W - 80;
        svg.append(s('text', { class: 'xlabel', x: right ? xa - 4 : xa + 16, y: (ya + yb) / 2 + (r ? 12 : -4), 'text-anchor': right ? 'end' : 'start' }, 'cross-site'));
        lastLabel[r] = xa;
        row = 1 - r;
      }
    }
  }
  return svg;
}
