// Resource detail: one system's health, how it is reached, its partitions, and a
// queue-history heatmap (time × partition) from the stored history.
import { h, s, replace, ago, clock, healthDot, emptyState, errorBox, gating, keepFocus } from '../dom.js';
import * as api from '../api.js';
import { partitionRow } from './overview.js';

const RAMP = [[31, 59, 87], [47, 127, 155], [226, 179, 60], [226, 85, 60]];

function colour(t) {
  t = Math.max(0, Math.min(1, t));
  const x = t * (RAMP.length - 1), i = Math.min(RAMP.length - 2, Math.floor(x)), f = x - i;
  const c = RAMP[i].map((v, k) => Math.round(v + (RAMP[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** heatmap draws points as an SVG grid: a column per sample time, a row per partition. */
export function heatmap(points, metric) {
  const times = [...new Set(points.map(p => p.taken_at))].sort();
  const parts = [...new Set(points.map(p => p.partition))].sort();
  const val = new Map();
  for (const p of points) {
    const k = `${p.taken_at}|${p.partition}`;
    if (val.has(k)) continue; // accounts share a partition's capacity
    val.set(k, metric === 'busy' ? gating(p).busy : p.pending_jobs);
  }
  const max = metric === 'busy' ? 1 : Math.max(1, ...val.values());
  const labelW = 130, cell = Math.max(4, Math.min(24, Math.floor(760 / Math.max(1, times.length)))), rowH = 20, top = 4, bottom = 22;
  const W = labelW + cell * times.length + 4, H = top + rowH * parts.length + bottom;
  const svg = s('svg', { class: 'heatmap', id: 'heatmap', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img',
    'aria-label': `${metric === 'busy' ? 'Busy share' : 'Queue depth'} per partition over ${times.length} samples from ${clock(times[0])} to ${clock(times[times.length - 1])}` });
  parts.forEach((p, r) => {
    svg.append(s('text', { x: labelW - 6, y: top + r * rowH + 14, 'text-anchor': 'end' }, p));
    times.forEach((t, c) => {
      const v = val.get(`${t}|${p}`);
      if (v === undefined) return;
      svg.append(s('rect', { x: labelW + c * cell, y: top + r * rowH + 1, width: cell - 1, height: rowH - 2, fill: colour(v / max), class: 'cell' },
        s('title', {}, `${p} at ${clock(t)}: ${metric === 'busy' ? Math.round(v * 100) + '% busy' : v + ' pending'}`)));
    });
  });
  const y = top + rowH * parts.length + 15;
  svg.append(s('text', { x: labelW, y }, clock(times[0])));
  svg.append(s('text', { x: W - 4, y, 'text-anchor': 'end' }, clock(times[times.length - 1])));
  return { svg, max };
}

export async function render(ctx) {
  const { root, args } = ctx;
  const name = args[0];
  if (!name) { location.hash = '#/overview'; return; }
  const head = h('div');
  const partsBox = h('div', { class: 'grid' });
  const metric = h('select', { id: 'hm-metric' }, h('option', { value: 'queue' }, 'queue depth'), h('option', { value: 'busy' }, 'busy share'));
  const span = h('select', { id: 'hm-span' }, [['1h', 'last hour'], ['6h', 'last 6 hours'], ['24h', 'last day'], ['168h', 'last week']].map(([v, t]) => h('option', { value: v, selected: v === '6h' }, t)));
  const hm = h('div', { id: 'heatmap-box' });
  const env = h('div', { id: 'env-box' });
  const conn = h('div', { class: 'card', id: 'connection' });
  replace(root, h('p', {}, h('a', { href: '#/overview' }, '← Overview')), head,
    h('section', { class: 'card', 'aria-labelledby': 'hm-h' },
      h('div', { class: 'toolbar' }, h('h2', { id: 'hm-h' }, 'Queue history'), h('span', { class: 'spacer' }),
        h('label', { for: 'hm-metric' }, 'Colour by'), metric, h('label', { for: 'hm-span' }, 'Span'), span),
      hm),
    h('h2', { class: 'section-h' }, 'Connection and partitions'), partsBox, h('p'), env);

  const load = async () => {
    const d = await api.get(`/api/resources/${api.enc(name)}`);
    const sys = d.system;
    replace(head,
      h('div', { class: 'view-head' }, healthDot(sys.health), h('h1', {}, sys.system), h('span', { class: 'badge-prov' }, d.kind),
        h('span', { class: 'chip' }, sys.health), h('span', { class: 'muted' }, `probed ${ago(sys.last_probe)} · ${sys.probe_latency_ms} ms`)),
      sys.last_error ? h('p', { class: 'error' }, sys.last_error) : null);
    replace(conn, h('h3', {}, 'Connection'), h('p'),
        h('dl', { class: 'facts' },
          h('dt', {}, 'Provider'), h('dd', {}, d.kind),
          h('dt', {}, 'Scheduler'), h('dd', {}, d.dialect || 'slurm'),
          h('dt', {}, 'Host / endpoint'), h('dd', { class: 'mono' }, d.host || d.endpoint || sys.endpoint || '—'),
          h('dt', {}, 'Accounts'), h('dd', {}, d.accounts.length ? d.accounts.join(', ') : 'site default'),
          h('dt', {}, 'Work directory'), h('dd', { class: 'mono' }, d.workdir || '—'),
          h('dt', {}, 'Machine shape'), h('dd', {}, d.machine || 'described in the catalog'),
          h('dt', {}, 'Last success'), h('dd', {}, sys.last_success ? `${clock(sys.last_success)} (${ago(sys.last_success)})` : 'never'),
          h('dt', {}, 'Failed probes in a row'), h('dd', {}, String(sys.consecutive_bad || 0))));
    keepFocus(partsBox, () => replace(partsBox, conn, d.partitions.filter((r, i, a) => a.findIndex(x => x.partition === r.partition) === i).map(r =>
      h('article', { class: 'card part-card' },
        h('div', { class: 'card-head' }, h('h3', {}, r.partition), h('span', { class: 'chip' }, r.health),
          h('span', { class: 'age' }, r.exclusive ? 'whole nodes' : 'shared nodes')),
        partitionRow(r),
        h('div', { class: 'kv' },
          h('span', {}, 'nodes ', h('b', {}, `${r.nodes.idle} idle / ${r.nodes.mixed} mixed / ${r.nodes.allocated} alloc / ${r.nodes.down} down`)),
          h('span', {}, 'running ', h('b', {}, String(r.running_jobs))),
          h('span', {}, 'mine ', h('b', {}, `${r.my_running_jobs} running, ${r.my_pending_jobs} pending`)),
          h('span', {}, 'wall cap ', h('b', {}, r.walltime_cap && r.walltime_cap !== '0s' ? r.walltime_cap : 'none')),
          h('span', {}, 'account ', h('b', {}, r.account || 'default'))),
        h('div', { class: 'actions' }, h('button', { class: 'btn', type: 'button', dataset: { key: `launch-${r.partition}` }, onclick: () => ctx.app.openLaunch({ pin: r.system, partition: r.partition, gpus: r.gpus_per_node ? 1 : 0 }) }, 'Launch here'))))));
    return d;
  };
  const drawHeat = async () => {
    try {
      const r = await api.get('/api/federation/history' + api.qs({ system: name, since: span.value, limit: 50000 }));
      const pts = r.points || [];
      if (!pts.length) { replace(hm, emptyState('No history yet: the store keeps one sample per minute. Come back in a few minutes.')); return; }
      const { svg, max } = heatmap(pts, metric.value);
      replace(hm, h('div', { class: 'table-wrap' }, svg),
        h('div', { class: 'legend' }, h('span', {}, '0'), h('span', { class: 'ramp', 'aria-hidden': 'true' }),
          h('span', {}, metric.value === 'busy' ? '100% busy' : `${max} pending`)));
    } catch (e) { replace(hm, errorBox(e)); }
  };
  let d;
  try { d = await load(); } catch (e) { replace(root, errorBox(e)); return; }
  metric.addEventListener('change', drawHeat);
  span.addEventListener('change', drawHeat);
  await drawHeat();
  if (d.kind === 'ssh' || d.kind === 'local') {
    const btn = h('button', { class: 'btn', type: 'button', id: 'env-btn' }, 'Look around the login node');
    replace(env, h('section', { class: 'card' }, h('h2', {}, 'Login node'), h('p', { class: 'muted' }, 'Python, PyTorch, modules, container runtimes and your accounts, probed on demand.'), btn));
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        const x = await api.get(`/api/resources/${api.enc(name)}/env`);
        btn.replaceWith(h('dl', { class: 'facts' },
          h('dt', {}, 'Host'), h('dd', {}, `${x.user}@${x.host}`),
          h('dt', {}, 'Work directory'), h('dd', {}, `${x.workdir} ${x.workdir_exists ? '(exists)' : '(missing)'}`),
          h('dt', {}, 'Python'), h('dd', {}, x.python || 'not found'),
          h('dt', {}, 'PyTorch'), h('dd', {}, x.torch || 'not importable'),
          h('dt', {}, 'Containers'), h('dd', {}, (x.container_runtimes || []).join(', ') || 'none'),
          h('dt', {}, 'Modules'), h('dd', {}, `${x.module_count}: ${(x.modules || []).slice(0, 20).join(', ')}`),
          h('dt', {}, 'Associations'), h('dd', {}, (x.associations || []).join(', ') || '—')));
      } catch (e) { btn.disabled = false; btn.after(errorBox(e)); }
    });
  }
  ctx.onSnapshot(() => { load().catch(e => console.warn(e.message)); });
}
