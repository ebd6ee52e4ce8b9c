// Small DOM helpers. Every page element is built with h(); no HTML strings, so data
// from the API can never become markup (and the strict CSP needs no inline styles).

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' && 'value' in el) el.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'disabled') el[k] = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** h('div', {class: 'x'}, child, …) creates an HTML element. */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** s('rect', {...}) creates an SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** replace(el, ...children) empties el and appends children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function ago(t) {
  if (!t) return 'never';
  const d = (Date.now() - new Date(t).getTime()) / 1000;
  if (!isFinite(d)) return '—';
  if (d < 2) return 'just now';
  if (d < 60) return `${Math.round(d)} s ago`;
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return `${Math.round(d / 86400)} d ago`;
}

export function clock(t) {
  if (!t) return '—';
  const d = new Date(t);
  return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** Durations arrive as Go strings ("1h30m0s") or seconds; shown compactly. */
export function dur(v) {
  if (v === undefined || v === null || v === '' || v === 0 || v === '0s') return '—';
  if (typeof v === 'number') v = `${v}s`;
  return String(v).replace(/(\d)m0s$/, '$1m').replace(/(\d)h0m$/, '$1h');
}

export function pct(f) { return `${Math.round(f * 100)}%`; }

export function toast(msg, bad = false) {
  const box = document.getElementById('toasts');
  const t = h('div', { class: 'toast' + (bad ? ' bad' : '') }, msg);
  box.append(t);
  setTimeout(() => t.remove(), 6000);
}

export function announce(msg) {
  const live = document.getElementById('live');
  if (live) live.textContent = msg;
}

export function healthDot(health) {
  const hl = health || 'unknown';
  return h('span', { class: `dot ${hl}`, role: 'img', 'aria-label': `health ${hl}`, title: `health: ${hl}` });
}

export function stateChip(state) {
  return h('span', { class: `chip state-${state}` }, state || '—');
}

/** busyBar draws the busy share of a partition's gating resource. */
export function busyBar(frac, label) {
  const p = Math.max(0, Math.min(1, frac || 0));
  const cls = p >= 0.9 ? 'hi' : p >= 0.6 ? 'mid' : '';
  return h('div', { class: 'bar', role: 'img', 'aria-label': `${label}: ${pct(p)} busy`, title: `${pct(p)} busy` },
    h('i', { class: cls, style: { width: `${(p * 100).toFixed(1)}%` } }));
}

/** Gating resource of a record or history point: GPUs on GPU partitions, cores otherwise. */
export function gating(r) {
  const gpu = (r.gpus_per_node || 0) > 0 || (r.total_gpus || 0) > 0;
  const total = gpu ? r.total_gpus : r.total_cores;
  const free = gpu ? r.free_gpus : r.free_cores;
  const busy = total > 0 ? Math.min(1, Math.max(0, 1 - free / total)) : 0;
  return { gpu, total, free, busy, unit: gpu ? 'GPUs' : 'cores' };
}

/** One record per (system, partition): accounts share the partition's capacity. */
export function partitions(records) {
  const seen = new Map();
  for (const r of records || []) {
    const k = `${r.system}/${r.partition}`;
    if (!seen.has(k)) seen.set(k, r);
  }
  return [...seen.values()];
}

export function emptyState(text, ...more) {
  return h('div', { class: 'empty', role: 'status' }, h('p', {}, text), ...more);
}

export function errorBox(err) {
  return h('div', { class: 'alert', role: 'alert' }, err && err.message ? err.message : String(err));
}

/**
 * keepFocus runs a re-render of container and puts keyboard focus back on the
 * equivalent element (same id, href or data-key), so live refreshes never throw a
 * keyboard user back to the top of the page.
 */
export function keepFocus(container, render) {
  const a = document.activeElement;
  let sel = null;
  if (a && a !== document.body && container.contains(a)) {
    if (a.id) sel = `#${CSS.escape(a.id)}`;
    else if (a.getAttribute('href')) sel = `${a.tagName.toLowerCase()}[href="${CSS.escape(a.getAttribute('href'))}"]`;
    else if (a.dataset.key) sel = `[data-key="${CSS.escape(a.dataset.key)}"]`;
    else {
      const card = a.closest('[data-system][data-partition]');
      if (card) sel = `[data-system="${CSS.escape(card.dataset.system)}"][data-partition="${CSS.escape(card.dataset.partition)}"] ${a.tagName.toLowerCase()}`;
    }
  }
  render();
  if (sel) container.querySelector(sel)?.focus({ preventScroll: true });
}
