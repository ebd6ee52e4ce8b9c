// My tasks: the list (placement, sizing, job id, attempts, mode, state) and one task's
// detail with tabs — candidates (every rule's verdict), timeline, logs, attempts — and
// the actions cancel, replan, unpin & replan.
import { h, replace, clock, ago, stateChip, emptyState, errorBox, toast, dur, keepFocus } from '../dom.js';
import * as api from '../api.js';
import { candidateTable } from './candidates.js';
import { eventList } from './activity.js';
import { speedOf, speedText, realTime, human } from '../simclock.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled']);

export async function render(ctx) {
  if (ctx.args[0]) return detail(ctx, ctx.args[0]);
  return list(ctx);
}

async function list(ctx) {
  const { root, query } = ctx;
  const filter = h('select', { id: 't-state' },
    [['', 'all'], ['pending,placed,submitted,queued,running', 'active'], ['succeeded', 'succeeded'], ['failed', 'failed'], ['cancelled', 'cancelled']]
      .map(([v, t]) => h('option', { value: v, selected: v === (query.get('state') || '') }, t)));
  const body = h('div', { id: 'task-list' });
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'My tasks'), h('p', { class: 'muted' }, 'Newest first. Select a task for its decision, timeline and logs.')),
    h('div', { class: 'toolbar' }, h('label', { for: 't-state' }, 'State'), filter, h('span', { class: 'spacer' }),
      h('button', { class: 'btn primary', type: 'button', onclick: () => ctx.app.openLaunch({}) }, 'Launch task')),
    body);
  const load = async () => {
    try {
      const r = await api.get('/api/tasks' + api.qs({ state: filter.value, limit: 500 }));
      const ts = r.tasks || [];
      if (!ts.length) { replace(body, emptyState('No tasks yet.', h('button', { class: 'btn primary', type: 'button', onclick: () => ctx.app.openLaunch({}) }, 'Launch your first task'))); return; }
      keepFocus(body, () => replace(body, h('div', { class: 'table-wrap' }, h('table', { id: 'tasks-table' },
        h('caption', { class: 'sr-only' }, 'Tasks'),
        h('thead', {}, h('tr', {}, ['Task', 'State', 'Placement', 'Sizing', 'Job', 'Attempts', 'Mode', 'Updated'].map(t => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, ts.map(t => h('tr', { class: 'clickable', dataset: { task: t.id }, onclick: (e) => { if (!e.target.closest('a')) location.hash = `#/tasks/${t.id}`; } },
          h('th', { scope: 'row', class: 'task-name' }, h('a', { href: `#/tasks/${t.id}` }, t.name), h('div', { class: 'muted small mono' }, t.id)),
          h('td', {}, stateChip(t.state), t.reason && !['running', 'queued'].includes(t.state) ? h('div', { class: 'muted small reason', title: t.reason }, t.reason) : null),
          h('td', {}, t.system ? `${t.system} · ${t.partition}` : '—'),
          h('td', {}, t.sizing || '—'),
          h('td', { class: 'mono' }, t.job_id || '—', t.job_state ? h('div', { class: 'muted small' }, t.job_state) : null),
          h('td', { class: 'num' }, String(t.attempts)),
          h('td', {}, t.pinned ? h('span', { class: 'chip warn' }, 'pinned') : h('span', { class: 'chip' }, 'auto')),
          h('td', { title: t.updated_at }, ago(t.updated_at)))))))));
    } catch (e) { replace(body, errorBox(e)); }
  };
  filter.addEventListener('change', load);
  await load();
  let pending = null;
  ctx.onEvent(() => { clearTimeout(pending); pending = setTimeout(load, 300); });
}

async function detail(ctx, id) {
  const { root } = ctx;
  const head = h('div', { id: 'task-head' });
  const tabs = [['candidates', 'Candidates'], ['timeline', 'Timeline'], ['logs', 'Logs'], ['attempts', 'Attempts']];
  const saved = ctx.query.get('tab') || 'candidates';
  const tabBtns = tabs.map(([k, t]) => h('button', { role: 'tab', type: 'button', id: `tab-${k}`, 'aria-controls': `panel-${k}`, 'aria-selected': String(k === saved), tabindex: k === saved ? '0' : '-1', dataset: { tab: k } }, t));
  const panels = Object.fromEntries(tabs.map(([k]) => [k, h('div', { role: 'tabpanel', id: `panel-${k}`, 'aria-labelledby': `tab-${k}`, hidden: k !== saved, tabindex: '0' })]));
  const tablist = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Task detail' }, tabBtns);
  replace(root, h('p', {}, h('a', { href: '#/tasks' }, '← My tasks')), head, tablist, Object.values(panels));
  let current = saved;
  const select = (k, focus) => {
    current = k;
    for (const b of tabBtns) {
      const on = b.dataset.tab === k;
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
      if (on && focus) b.focus();
    }
    for (const [pk, p] of Object.entries(panels)) p.hidden = pk !== k;
    fill(k);
  };
  tablist.addEventListener('click', (e) => { const b = e.target.closest('[role=tab]'); if (b) select(b.dataset.tab); });
  tablist.addEventListener('keydown', (e) => {
    const i = tabs.findIndex(([k]) => k === current);
    if (e.key === 'ArrowRight') select(tabs[(i + 1) % tabs.length][0], true);
    else if (e.key === 'ArrowLeft') select(tabs[(i + tabs.length - 1) % tabs.length][0], true);
    else return;
    e.preventDefault();
  });

  let task = null;
  const loadTask = async () => {
    task = await api.get(`/api/tasks/${api.enc(id)}`);
    drawHead();
  };
  const act = async (label, path, body) => {
    try {
      task = await api.post(path, body);
      toast(`${label}: ${task.name} is ${task.state}`);
      drawHead();
      fill(current);
    } catch (e) { toast(e.message, true); }
  };
  const drawHead = () => {
    const last = task.attempts[task.attempts.length - 1];
    const env = task.envelope || {};
    const final = FINAL.has(task.state);
    const speed = speedOf(ctx.app.about, last?.system);
    const elapsed = speed ? simElapsed(last, speed) : '';
    replace(head,
      h('div', { class: 'view-head' }, h('h1', {}, task.name), stateChip(task.state), h('span', { class: 'mono muted' }, task.id),
        task.target ? h('span', { class: 'chip warn' }, `pinned to ${task.target.system}${task.target.partition ? ':' + task.target.partition : ''}`) : h('span', { class: 'chip' }, 'auto')),
      task.reason ? h('p', { class: task.state === 'failed' ? 'error' : 'muted', id: 'task-reason' }, task.reason) : null,
      h('div', { class: 'card' },
        h('dl', { class: 'facts' },
          h('dt', {}, 'Command'), h('dd', { class: 'mono' }, task.command || '(script)'),
          h('dt', {}, 'Placement'), h('dd', { id: 'task-placement' }, last ? `${last.system} · ${last.partition}${last.account ? ' · ' + last.account : ''}` : '—'),
          h('dt', {}, 'Job'), h('dd', { class: 'mono' }, last?.job_id || '—', last ? ` (${last.state})` : ''),
          h('dt', {}, 'Sizing'), h('dd', {}, last ? `${last.spec.nodes} node(s), ${last.spec.gpus} GPU, ${last.spec.ntasks * last.spec.cpus_per_task} cores, ${last.spec.memory_gb || 'default'} GB/node, ${dur(last.spec.walltime)}` : '—',
            speed ? h('span', { class: 'muted', id: 'task-walltime-real' }, ` (simulated at ${speedText(speed)}: takes ${realTime(last.spec.walltime, speed)} real time)`) : null),
          elapsed ? h('dt', {}, 'Time') : null, elapsed ? h('dd', { id: 'task-elapsed' }, elapsed) : null,
          h('dt', {}, 'Envelope'), h('dd', {}, `GPUs ${rng(env.gpus)} · cores ${rng(env.cpu_cores)} · memory ${rng(env.memory_gb)} GB · walltime ${rng(env.walltime)} · ${env.objective || 'earliest_start'} · source ${env.source || 'user'}${env.confidence ? ` (${Math.round(env.confidence * 100)}%)` : ''}`),
          h('dt', {}, 'Attempts'), h('dd', {}, `${task.attempts.length} of at most ${task.policy?.max_attempts ?? '?'}`),
          h('dt', {}, 'Created'), h('dd', {}, clock(task.created_at))),
        h('div', { class: 'actions' },
          h('button', { class: 'btn danger', type: 'button', id: 'cancel-btn', disabled: final, onclick: () => act('Cancelled', `/api/tasks/${api.enc(id)}/cancel`) }, 'Cancel'),
          h('button', { class: 'btn', type: 'button', id: 'replan-btn', disabled: final, onclick: () => act('Replanned', `/api/tasks/${api.enc(id)}/replan`, {}) }, 'Replan'),
          task.target ? h('button', { class: 'btn', type: 'button', id: 'unpin-btn', disabled: final, onclick: () => act('Unpinned and replanned', `/api/tasks/${api.enc(id)}/replan`, { clear_target: true }) }, 'Unpin & replan') : null)));
  };
  const fill = async (k) => {
    const p = panels[k];
    try {
      if (k === 'candidates') {
        if (!task.decision) { replace(p, emptyState('No decision recorded.')); return; }
        replace(p, candidateTable(task.decision, { verdicts: true }));
      } else if (k === 'timeline') {
        const evs = await api.latestEvents({ task: id }, 1000);
        replace(p, eventList(evs, { showTask: false, id: 'task-timeline' }));
      } else if (k === 'logs') {
        if (!task.attempts.some(a => a.job_id)) { replace(p, emptyState('No job submitted yet: logs appear once a site accepts the job.')); return; }
        const refresh = h('button', { class: 'btn', type: 'button', onclick: () => fill('logs') }, 'Refresh');
        let l;
        try {
          l = await api.get(`/api/tasks/${api.enc(id)}/logs?tail=65536`);
        } catch (e) {
          // 404: no job yet or the files are gone; 503: the site is unreachable. The
          // core says which, and what to do; show it as a state, not a failure.
          if (e.status === 404 || e.status === 503) {
            replace(p, emptyState(e.status === 503 ? 'Logs are unavailable right now.' : 'No logs to show.',
              h('p', { class: 'muted', id: 'logs-why' }, e.message), refresh));
            return;
          }
          throw e;
        }
        replace(p, h('div', { class: 'toolbar' }, h('span', { class: 'muted' }, `job ${l.job_id} · attempt ${l.attempt ?? '?'}${l.host ? ' · ' + l.host : ''}${l.truncated ? ' · tails only' : ''}`), h('span', { class: 'spacer' }),
          refresh),
        l.note ? h('p', { class: 'muted', id: 'logs-note', role: 'status' }, l.note) : null,
        h('h3', {}, 'stdout ', h('span', { class: 'muted small mono' }, l.stdout_path || '')), h('pre', { class: 'log', id: 'log-stdout', tabindex: '0' }, l.stdout || '(empty)'),
        h('h3', {}, 'stderr ', h('span', { class: 'muted small mono' }, l.stderr_path || '')), h('pre', { class: 'log', id: 'log-stderr', tabindex: '0' }, l.stderr || '(empty)'));
      } else if (k === 'attempts') {
        replace(p, h('div', { class: 'table-wrap' }, h('table', {},
          h('thead', {}, h('tr', {}, ['#', 'System', 'Partition', 'Job', 'State', 'Exit', 'Reason', 'Started', 'Ended'].map(t => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, task.attempts.map(a => h('tr', {},
            h('td', { class: 'num' }, String(a.n)), h('td', {}, a.system), h('td', {}, a.partition), h('td', { class: 'mono' }, a.job_id || '—'),
            h('td', {}, a.state), h('td', { class: 'num' }, a.exit_code ?? '—'), h('td', {}, a.reason || ''),
            h('td', {}, clock(a.started_at)), h('td', {}, clock(a.ended_at))))))));
      }
    } catch (e) { replace(p, errorBox(e)); }
  };
  try { await loadTask(); } catch (e) { replace(root, h('p', {}, h('a', { href: '#/tasks' }, '← My tasks')), errorBox(e)); return; }
  await fill(current);
  let pending = null;
  ctx.onEvent((ev) => {
    if (ev.task_id !== id) return;
    clearTimeout(pending);
    pending = setTimeout(async () => { try { await loadTask(); if (current !== 'logs') fill(current); } catch (e) { console.warn(e.message); } }, 200);
  });
}

// simElapsed is an attempt's queued or run time on a simulated system in both clocks
// (its times are the wall clock's): "ran 2s real time = 4m simulated".
function simElapsed(a, speed) {
  let from = a.started_at, verb = 'running for';
  if (a.started_at && a.ended_at) verb = 'ran';
  else if (!a.started_at && a.state === 'pending') { from = a.created_at; verb = 'queued for'; }
  if (!from) return '';
  const end = a.started_at && a.ended_at ? new Date(a.ended_at) : new Date();
  const real = Math.max(0, (end - new Date(from)) / 1000);
  return `${verb} ${human(Math.round(real))} real time = ${human(Math.round(real * speed))} simulated (at ${speedText(speed)})`;
}

function rng(r) {
  if (!r || (!r.min && !r.max)) return '—';
  const a = r.min ?? 0, b = r.max ?? a;
  return String(a) === String(b) ? String(a) : `${a}–${b}`;
}
