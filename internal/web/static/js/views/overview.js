// Overview: the resource wall. A card per system, a row per partition with the busy
// share of its gating resource, free units and queue depth; sortable.
import { h, replace, ago, healthDot, busyBar, gating, partitions, emptyState, keepFocus } from '../dom.js';

const SORTS = {
  gpus: { label: 'Free GPUs', key: (r) => -(r.free_gpus || 0), sys: (rs) => -rs.reduce((n, r) => n + (r.free_gpus || 0), 0) },
  util: { label: 'Utilisation', key: (r) => -gating(r).busy, sys: (rs) => -avg(rs.map(r => gating(r).busy)) },
  queue: { label: 'Queue depth', key: (r) => -(r.pending_jobs || 0), sys: (rs) => -rs.reduce((n, r) => n + (r.pending_jobs || 0), 0) },
  name: { label: 'Name', key: () => 0, sys: () => 0 },
};

function avg(xs) { return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0; }

export function systemCard(sys, recs, sortKey) {
  const rows = [...recs].sort((a, b) => SORTS[sortKey].key(a) - SORTS[sortKey].key(b) || a.partition.localeCompare(b.partition));
  const href = `#/resources/${encodeURIComponent(sys.system)}`;
  return h('article', { class: 'card system-card', 'aria-labelledby': `sys-${cssId(sys.system)}` },
    h('div', { class: 'card-head' },
      healthDot(sys.health),
      h('h2', { id: `sys-${cssId(sys.system)}` }, h('a', { href }, sys.system)),
      h('span', { class: 'badge-prov', title: 'provider' }, sys.provider || '?'),
      h('span', { class: 'chip' + (sys.health === 'ok' ? ' ok' : sys.health === 'degraded' ? ' warn' : ' bad') }, sys.health),
      h('span', { class: 'age', title: sys.last_probe }, `probed ${ago(sys.last_probe)}`)),
    sys.last_error ? h('p', { class: 'error small' }, sys.last_error) : null,
    h('div', { class: 'prow muted small', 'aria-hidden': 'true' }, h('span', {}, 'partition'), h('span', {}, 'busy'), h('span', { class: 'num' }, 'free'), h('span', { class: 'num' }, 'queue')),
    rows.map(r => partitionRow(r)));
}

export function partitionRow(r) {
  const g = gating(r);
  return h('div', { class: 'prow', dataset: { partition: r.partition } },
    h('span', { class: 'pname', title: r.partition },
      r.partition,
      // The sub-label wraps between its parts, never inside "40 GB" (no-break spaces).
      h('small', {}, r.gpu_model ? `${r.gpus_per_node}×\u00a0${r.gpu_model} · ${r.gpu_memory_gb}\u00a0GB` : `${r.cpu_cores_per_node}\u00a0cores · ${r.arch}`)),
    busyBar(g.busy, `${r.system} ${r.partition}`),
    h('span', { class: 'num', title: `${g.free} of ${g.total} ${g.unit} free` }, `${g.free.toLocaleString()} ${g.unit}`),
    h('span', { class: 'num', title: `${r.pending_jobs} pending, ${r.running_jobs} running` }, `Q ${r.pending_jobs}`));
}

export function cssId(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, '_'); }

export async function render(ctx) {
  const { app, root } = ctx;
  const saved = localStorage.getItem('mosaic.overview.sort') || 'gpus';
  const sel = h('select', { id: 'ov-sort' }, Object.entries(SORTS).map(([k, v]) => h('option', { value: k, selected: k === saved }, v.label)));
  const wall = h('div', { class: 'grid', id: 'wall' });
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'Overview'), h('p', { class: 'muted' }, 'Every system of the federation as one machine.')),
    h('div', { class: 'toolbar' }, h('label', { for: 'ov-sort' }, 'Sort by'), sel),
    wall);
  const draw = (snap) => {
    if (!snap) { replace(wall, emptyState('Waiting for the first probe round…')); return; }
    const parts = partitions(snap.records);
    const key = SORTS[sel.value] ? sel.value : 'gpus';
    const systems = [...snap.systems].sort((a, b) => {
      const ra = parts.filter(r => r.system === a.system), rb = parts.filter(r => r.system === b.system);
      return SORTS[key].sys(ra) - SORTS[key].sys(rb) || a.system.localeCompare(b.system);
    });
    keepFocus(wall, () => replace(wall, systems.map(sys => systemCard(sys, parts.filter(r => r.system === sys.system), key))));
  };
  sel.addEventListener('change', () => { localStorage.setItem('mosaic.overview.sort', sel.value); draw(app.snapshot); });
  draw(app.snapshot);
  ctx.onSnapshot(draw);
}
