// The workbench shell: session, router, sidebar of systems, stat strip, live updates
// (polling the snapshot each tick; the activity log over server-sent events), the bell
// and the theme.
import { h, replace, ago, healthDot, partitions, gating, toast, errorBox, announce } from './dom.js';
import * as api from './api.js';
import { applyTheme, currentTheme, setTheme } from './theme.js';
import * as globus from './globus.js';
import { showBadge as showSimClock } from './simclock.js';
import { openLaunch } from './views/launch.js';
import * as overview from './views/overview.js';
import * as idle from './views/idle.js';
import * as tasks from './views/tasks.js';
import * as resource from './views/resource.js';
import * as activity from './views/activity.js';
import * as campaigns from './views/campaigns.js';
import * as addres from './views/addresource.js';
import * as settings from './views/settings.js';

const ACTIVE = 'pending,placed,submitted,queued,running';

/** app is the shared state every view reads. */
export const app = {
  about: null,
  snapshot: null,
  activeTasks: 0,
  listeners: { snapshot: new Set(), event: new Set() },
  on(kind, fn) { this.listeners[kind].add(fn); return () => this.listeners[kind].delete(fn); },
  emit(kind, v) { for (const fn of [...this.listeners[kind]]) { try { fn(v); } catch (e) { console.warn('listener', e); } } },
  openLaunch: (opts) => openLaunch(app, opts),
};

const routes = {
  overview: overview.render,
  idle: idle.render,
  tasks: tasks.render,
  resources: resource.render,
  activity: activity.render,
  campaigns: campaigns.render,
  add: addres.render,
  settings: settings.render,
};

let unsubs = [];

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || 'overview', args: parts.slice(1), query: new URLSearchParams(query || '') };
}

async function route() {
  for (const u of unsubs) u();
  unsubs = [];
  const { name, args, query } = parseHash();
  const render = routes[name];
  const main = document.getElementById('main');
  document.getElementById('shell').classList.remove('nav-open');
  document.getElementById('menu-btn').setAttribute('aria-expanded', 'false');
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.toggleAttribute('aria-current', false);
    if (a.dataset.nav === name) a.setAttribute('aria-current', 'page');
  }
  markSystems();
  if (!render) {
    replace(main, h('h1', {}, 'Not found'), h('p', {}, 'No view called ', h('code', {}, name), '. ', h('a', { href: '#/overview' }, 'Back to the overview')));
    return;
  }
  const ctx = {
    app, args, query, root: main,
    onSnapshot(fn) { unsubs.push(app.on('snapshot', fn)); },
    onEvent(fn) { unsubs.push(app.on('event', fn)); },
    onLeave(fn) { unsubs.push(fn); },
  };
  main.dataset.view = name;
  main.setAttribute('aria-busy', 'true');
  try {
    await render(ctx);
  } catch (e) {
    console.warn('view', name, e);
    replace(main, errorBox(e));
  } finally {
    main.removeAttribute('aria-busy');
  }
  document.title = `${main.querySelector('h1')?.textContent || 'Mosaic'} · Mosaic`;
}

function markSystems() {
  const { name, args } = parseHash();
  for (const a of document.querySelectorAll('#systems a')) {
    a.toggleAttribute('aria-current', false);
    if (name === 'resources' && a.dataset.system === args[0]) a.setAttribute('aria-current', 'page');
  }
}

function renderSidebar(snap) {
  const list = document.getElementById('systems');
  const parts = partitions(snap.records);
  replace(list, snap.systems.map(sys => {
    let free = 0, unit = 'GPUs';
    const mine = parts.filter(r => r.system === sys.system);
    const gpus = mine.reduce((n, r) => n + (r.total_gpus || 0), 0);
    if (gpus > 0) free = mine.reduce((n, r) => n + (r.free_gpus || 0), 0);
    else { unit = 'cores'; free = mine.reduce((n, r) => n + (r.free_cores || 0), 0); }
    return h('li', {}, h('a', { href: `#/resources/${encodeURIComponent(sys.system)}`, dataset: { system: sys.system } },
      healthDot(sys.health), h('span', {}, sys.system),
      h('span', { class: 'sub', title: `free ${unit}` }, `${free} ${unit === 'GPUs' ? 'GPU' : 'cpu'}`)));
  }));
  markSystems();
}

function renderStats(snap) {
  const parts = partitions(snap.records);
  const up = snap.systems.filter(s => s.health === 'ok' || s.health === 'degraded').length;
  const sum = (f) => parts.reduce((n, r) => n + (r[f] || 0), 0);
  const stat = (v, label, title) => h('li', { title }, h('b', {}, String(v)), h('span', {}, label));
  replace(document.getElementById('stats'),
    stat(`${up}/${snap.systems.length}`, 'systems up', 'systems whose last probe succeeded'),
    stat(sum('free_gpus'), 'free GPUs', 'idle GPUs across the federation'),
    stat(sum('free_cores').toLocaleString(), 'free cores', 'idle CPU cores across the federation'),
    stat(sum('pending_jobs').toLocaleString(), 'queued jobs', 'pending jobs in every partition'),
    stat(app.activeTasks, 'my active tasks', 'your tasks not yet finished'),
    stat(ago(snap.taken_at), `probe #${snap.seq}`, 'age of the latest snapshot'));
}

async function pollSnapshot() {
  try {
    const snap = await api.get('/api/federation');
    app.snapshot = snap;
    renderSidebar(snap);
    renderStats(snap);
    globus.onSnapshot(snap);
    app.emit('snapshot', snap);
  } catch (e) {
    if (e.status !== 503) console.warn('snapshot', e.message);
  }
}

async function countActive() {
  try {
    const r = await api.get(`/api/tasks?state=${ACTIVE}&limit=1000`);
    app.activeTasks = (r.tasks || []).length;
    if (app.snapshot) renderStats(app.snapshot);
  } catch (e) { console.warn('tasks', e.message); }
}

// ---- Live activity over server-sent events -----------------------------------
// The stream opens with a `ready` message carrying its position; every event carries
// its id. Reconnecting with after_id = the last id seen replays what was missed (the
// server also honours Last-Event-ID, which EventSource resends), and ids at or below
// it are dropped, so nothing is lost or shown twice across a restart of the core.
let lastEventID = -1; // -1: position not known yet (start from the newest)
let es = null;
let retries = 0;

function connectEvents() {
  const q = lastEventID >= 0 ? `?after_id=${lastEventID}` : '';
  es = new EventSource(`/api/events/stream${q}`);
  es.addEventListener('open', () => { retries = 0; });
  es.addEventListener('ready', (m) => {
    let r;
    try { r = JSON.parse(m.data); } catch { return; }
    // The server's position: our cursor, or 0 when the store is not the one we followed.
    if (typeof r.last_id === 'number') lastEventID = r.last_id;
  });
  es.addEventListener('event', (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch { return; }
    if (!(ev.id > lastEventID)) return; // already shown
    lastEventID = ev.id;
    bell.push(ev);
    app.emit('event', ev);
    if (['finished', 'failure', 'dispatch', 'cancelled'].includes(ev.kind)) countActive();
  });
  es.addEventListener('ping', () => {});
  es.addEventListener('error', async () => {
    // Reconnect explicitly with after_id (so the position survives even a new
    // EventSource), backing off up to 30 s. Browser sessions live in the core's
    // memory: after a restart the page must sign in again, so stop and say so.
    es.close();
    retries = Math.min(retries + 1, 6);
    if (retries >= 2) {
      try { if (!(await api.session())) { signedOut(); return; } } catch { /* core still away */ }
    }
    setTimeout(connectEvents, Math.min(30000, 500 * 2 ** retries));
  });
}

// ---- The bell: continuations and failures since last read ---------------------
const BELL_KEY = 'mosaic.bell.lastRead';
const bell = {
  items: [],
  lastRead() { return Number(localStorage.getItem(BELL_KEY) || 0); },
  async load() {
    try {
      const r = await api.get(`/api/events?kind=continuation,failure&after_id=${this.lastRead()}&limit=200`);
      this.items = r.events || [];
      this.draw();
    } catch (e) { console.warn('bell', e.message); }
  },
  push(ev) {
    if ((ev.kind === 'continuation' || ev.kind === 'failure') && ev.id > this.lastRead() && !this.items.some(x => x.id === ev.id)) {
      this.items.push(ev);
      this.draw();
      announce(`${ev.kind}: ${ev.message}`);
    }
  },
  markRead() {
    const max = this.items.reduce((m, e) => Math.max(m, e.id), this.lastRead());
    localStorage.setItem(BELL_KEY, String(max));
    this.items = [];
    this.draw();
  },
  draw() {
    const n = this.items.length;
    const badge = document.getElementById('bell-count');
    badge.hidden = n === 0;
    badge.textContent = String(n);
    document.getElementById('bell-btn').setAttribute('aria-label', `Notifications: ${n} unread continuation${n === 1 ? '' : 's'} and failures`);
    const panel = document.getElementById('bell-panel');
    replace(panel,
      h('div', { class: 'toolbar' }, h('h2', {}, 'Since last read'), h('span', { class: 'spacer' }),
        h('button', { class: 'btn', type: 'button', onclick: () => this.markRead(), disabled: n === 0 }, 'Mark all read')),
      n === 0 ? h('p', { class: 'muted' }, 'Nothing new: no continuations or failures since you last looked.')
        : h('ul', {}, [...this.items].reverse().map(e => h('li', {},
          h('span', { class: `chip kind-${e.kind}` }, e.kind), ' ',
          e.task_id ? h('a', { href: `#/tasks/${e.task_id}` }, e.message) : e.message,
          e.rationale ? h('div', { class: 'muted small' }, e.rationale) : null))));
  },
};

function setupBell() {
  const btn = document.getElementById('bell-btn');
  const panel = document.getElementById('bell-panel');
  const close = () => { panel.hidden = true; btn.setAttribute('aria-expanded', 'false'); };
  btn.addEventListener('click', () => {
    panel.hidden = !panel.hidden;
    btn.setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) panel.querySelector('button, a')?.focus();
  });
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !panel.hidden) { close(); btn.focus(); } });
  document.addEventListener('click', (e) => { if (!panel.hidden && !e.target.closest('.bell-wrap')) close(); });
  panel.addEventListener('click', (e) => { if (e.target.closest('a')) close(); });
}

// ---- Theme -------------------------------------------------------------------
function setupTheme() {
  applyTheme(currentTheme());
  document.getElementById('theme-btn').addEventListener('click', () =>
    setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
}

function setupMenu() {
  const btn = document.getElementById('menu-btn');
  const shell = document.getElementById('shell');
  btn.addEventListener('click', () => {
    const open = shell.classList.toggle('nav-open');
    btn.setAttribute('aria-expanded', String(open));
    if (open) document.querySelector('#nav a')?.focus();
  });
}

function signedOut() {
  replace(document.getElementById('main'),
    h('h1', {}, 'Sign in'),
    h('p', {}, 'This browser is not signed in to this Mosaic core. Open the one-time login link that ', h('code', {}, 'mosaic serve'),
      ' printed, or ', h('a', { href: '/login' }, 'paste the API token'), '.'));
}

async function boot() {
  setupTheme();
  setupMenu();
  setupBell();
  let sess;
  try { sess = await api.session(); } catch (e) { replace(document.getElementById('main'), errorBox(e)); return; }
  if (!sess) { signedOut(); return; }
  document.getElementById('launch-btn').addEventListener('click', () => app.openLaunch({}));
  try { app.about = await api.get('/api/about'); } catch (e) { toast(e.message, true); }
  showSimClock(app.about);
  try { showWhoami(await api.get('/api/whoami')); } catch { /* a core without users: no chip */ }
  await globus.start();
  await pollSnapshot();
  countActive();
  bell.load();
  connectEvents();
  window.addEventListener('hashchange', route);
  await route();
  // The snapshot changes once per probe tick; poll at that pace (at least every 2 s).
  const tick = Math.max(2000, parseTick(app.about?.tick) || 5000);
  setInterval(pollSnapshot, tick);
  setInterval(countActive, Math.max(tick, 10000));
  document.body.dataset.ready = 'true';
}

/** showWhoami names the signed-in user in the top bar ("local" is the laptop's). */
function showWhoami(w) {
  const el = document.getElementById('whoami');
  if (!el || !w || !w.name) return;
  replace(el, 'signed in as ', h('strong', {}, w.name), w.admin ? ' · admin' : '');
  el.title = w.admin ? `${w.name} is an admin: sees and acts on every user's tasks` : `${w.name} sees and acts on their own tasks`;
  el.hidden = false;
}

function parseTick(s) {
  if (!s) return 0;
  let ms = 0;
  for (const [, n, u] of String(s).matchAll(/([\d.]+)(ms|h|m|s)/g)) {
    ms += Number(n) * ({ ms: 1, s: 1000, m: 60000, h: 3600000 })[u];
  }
  return ms;
}

boot();
