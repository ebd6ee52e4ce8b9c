// Idle compute: partitions with free capacity now, filtered; each card can launch a
// task pinned there or open the system's details.
import { h, replace, busyBar, gating, emptyState, errorBox, dur } from '../dom.js';
import * as api from '../api.js';

export async function render(ctx) {
  const { app, root, query } = ctx;
  const snap = app.snapshot;
  const recs = snap ? snap.records : [];
  const models = [...new Set(recs.map(r => r.gpu_model).filter(Boolean))].sort();
  const archs = [...new Set(recs.map(r => r.arch).filter(Boolean))].sort();
  const provs = [...new Set(recs.map(r => r.provider).filter(Boolean))].sort();
  const f = {
    gpus: h('input', { id: 'f-gpus', type: 'number', min: 0, value: query.get('gpus') || '' , inputmode: 'numeric' }),
    gpu_mem: h('input', { id: 'f-gpumem', type: 'number', min: 0, value: query.get('gpu_mem') || '' }),
    gpu_model: h('select', { id: 'f-model' }, h('option', { value: '' }, 'any'), models.map(m => h('option', { value: m }, m))),
    arch: h('select', { id: 'f-arch' }, h('option', { value: '' }, 'any'), archs.map(m => h('option', { value: m }, m))),
    max_queue: h('input', { id: 'f-queue', type: 'number', min: 0, value: query.get('max_queue') || '' }),
    provider: h('select', { id: 'f-prov' }, h('option', { value: '' }, 'any'), provs.map(m => h('option', { value: m }, m))),
  };
  const field = (id, label, el) => h('div', { class: 'field' }, h('label', { for: id }, label), el);
  const out = h('div', { class: 'grid', id: 'idle-list', 'aria-live': 'polite' });
  const form = h('form', { class: 'row', role: 'search', 'aria-label': 'Filter idle partitions' },
    field('f-gpus', 'Free GPUs ≥', f.gpus), field('f-gpumem', 'GPU memory ≥ (GB)', f.gpu_mem),
    field('f-model', 'GPU model', f.gpu_model), field('f-arch', 'Arch', f.arch),
    field('f-queue', 'Queue depth ≤', f.max_queue), field('f-prov', 'Provider', f.provider));
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'Idle compute'), h('p', { class: 'muted' }, 'Partitions with free capacity right now, most free first.')),
    h('div', { class: 'card' }, form), h('p'), out);

  const load = async () => {
    const params = {
      gpus: f.gpus.value, gpu_mem: f.gpu_mem.value, gpu_model: f.gpu_model.value, arch: f.arch.value,
      max_queue: f.max_queue.value === '' ? '' : f.max_queue.value, provider: f.provider.value,
    };
    try {
      const r = await api.get('/api/idle' + api.qs(params));
      const parts = r.partitions || [];
      const seen = new Set();
      const uniq = parts.filter(p => { const k = `${p.system}/${p.partition}`; if (seen.has(k)) return false; seen.add(k); return true; });
      if (!uniq.length) { cards.clear(); replace(out, emptyState(r.explanation ? `Nothing idle: ${r.explanation}.` : 'No partition has that much free right now. Loosen a filter, or launch with Auto and let it queue.')); return; }
      // Keep each card (and the button under the pointer or focus) across refreshes;
      // only its figures change.
      const keep = new Map();
      for (const p of uniq) {
        const k = `${p.system}/${p.partition}`;
        const card = cards.get(k) || idleCard(app, p);
        card.update(p);
        keep.set(k, card);
      }
      cards.clear();
      for (const [k, v] of keep) cards.set(k, v);
      const els = [...keep.values()].map(c => c.el);
      if (out.children.length !== els.length || els.some((el, i) => out.children[i] !== el)) replace(out, els);
    } catch (e) { replace(out, errorBox(e)); }
  };
  let timer;
  const cards = new Map();
  form.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(load, 250); });
  form.addEventListener('submit', (e) => { e.preventDefault(); load(); });
  await load();
  ctx.onSnapshot(() => { if (!form.contains(document.activeElement)) load(); });
}

function idleCard(app, first) {
  const kv = h('div', { class: 'kv' });
  const barBox = h('div');
  let cur = first;
  const el = h('article', { class: 'card idle-card', dataset: { system: first.system, partition: first.partition } },
    h('div', { class: 'card-head' }, h('h2', {}, `${first.system} · ${first.partition}`), h('span', { class: 'badge-prov' }, first.provider)),
    kv, h('p'), barBox,
    h('div', { class: 'actions' },
      h('button', { class: 'btn primary', type: 'button', onclick: () => app.openLaunch({ pin: cur.system, partition: cur.partition, gpus: cur.gpus_per_node ? 1 : 0 }) }, 'Launch here'),
      h('a', { class: 'btn', href: `#/resources/${encodeURIComponent(first.system)}` }, 'Details')));
  const update = (p) => {
    cur = p;
    const g = gating(p);
    replace(kv,
      h('span', {}, h('b', {}, `${g.free.toLocaleString()}`), ` free ${g.unit} of ${g.total.toLocaleString()}`),
      p.gpu_model ? h('span', {}, h('b', {}, p.gpu_model), ` · ${p.gpu_memory_gb} GB`) : h('span', {}, h('b', {}, p.arch)),
      h('span', {}, 'queue ', h('b', {}, String(p.pending_jobs))),
      h('span', {}, 'wall cap ', h('b', {}, dur(p.walltime_cap))));
    replace(barBox, busyBar(g.busy, `${p.system} ${p.partition}`));
  };
  return { el, update };
}
