// Agent activity: every decision, dispatch, transition and continuation with its
// rationale, newest first, live.
import { h, replace, clock, emptyState, errorBox } from '../dom.js';
import * as api from '../api.js';

const KINDS = ['decision', 'dispatch', 'transition', 'continuation', 'failure', 'finished', 'cancelled', 'replan', 'recovery', 'draft'];

export function eventItem(e, showTask = true) {
  return h('li', { dataset: { kind: e.kind, id: e.id } },
    h('span', { class: 'when', title: e.time }, clock(e.time)),
    h('span', {}, h('span', { class: `chip kind-${e.kind}` }, e.kind), h('div', { class: 'muted small' }, e.actor)),
    h('div', {},
      h('div', {}, showTask && e.task_id ? [h('a', { href: `#/tasks/${e.task_id}` }, e.task_id), ' · '] : null,
        e.message, e.system ? h('span', { class: 'muted' }, ` · ${e.system}`) : null, e.attempt ? h('span', { class: 'muted' }, ` · attempt ${e.attempt}`) : null),
      e.rationale ? h('div', { class: 'why' }, e.rationale) : null));
}

/** eventList renders events (oldest first for a timeline, as given). */
export function eventList(events, { showTask = true, id } = {}) {
  if (!events.length) return emptyState('No events yet.');
  return h('div', { class: 'card' }, h('ol', { class: 'timeline', id }, events.map(e => eventItem(e, showTask))));
}

export async function render(ctx) {
  const { root } = ctx;
  const kind = h('select', { id: 'a-kind' }, h('option', { value: '' }, 'all kinds'),
    h('option', { value: 'continuation,failure' }, 'continuations & failures'), KINDS.map(k => h('option', { value: k }, k)));
  const list = h('ol', { class: 'timeline', id: 'activity-list', 'aria-live': 'polite' });
  const body = h('div', { class: 'card' }, list);
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'Agent activity'), h('p', { class: 'muted' }, 'What the rules, the ranker and the continuation policy did, and why. Live.')),
    h('div', { class: 'toolbar' }, h('label', { for: 'a-kind' }, 'Show'), kind), body);
  const matches = (e) => !kind.value || kind.value.split(',').includes(e.kind);
  const load = async () => {
    try {
      const evs = (await api.latestEvents({ kind: kind.value }, 300)).reverse();
      if (!evs.length) { replace(body, emptyState('Nothing has happened yet. Launch a task and watch its decisions here.')); return; }
      replace(body, list);
      replace(list, evs.map(e => eventItem(e)));
    } catch (e) { replace(body, errorBox(e)); }
  };
  kind.addEventListener('change', load);
  await load();
  ctx.onEvent((e) => {
    if (!matches(e) || list.querySelector(`[data-id="${e.id}"]`)) return;
    if (!body.contains(list)) replace(body, list);
    list.prepend(eventItem(e));
    while (list.children.length > 500) list.lastChild.remove();
  });
}
