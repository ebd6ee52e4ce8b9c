// The candidate table of a placement decision: every (system, partition, account) the
// rules considered, each rule's verdict, the sizing, scores, wait estimate and ranks.
import { h, dur } from '../dom.js';

function key(c) { return `${c.system}/${c.partition}/${c.account}`; }

function sizing(s) {
  if (!s) return '—';
  const parts = [`${s.nodes}n`];
  if (s.gpus) parts.push(`${s.gpus} GPU`);
  parts.push(`${(s.ntasks || 1) * (s.cpus_per_task || 1)} cpu`);
  if (s.memory_gb) parts.push(`${s.memory_gb} GB/node`);
  parts.push(dur(s.walltime));
  return parts.join(' · ');
}

/** candidateTable renders a decision's candidates; verdicts=true lists every rule. */
export function candidateTable(d, { verdicts = false } = {}) {
  const cands = d.candidates || [];
  const feasible = cands.filter(c => c.feasible).length;
  const head = h('div', { class: 'kv', 'aria-label': 'Decision summary' },
    h('span', {}, 'mode ', h('b', {}, d.mode || '—')),
    h('span', {}, 'ranker ', h('b', {}, d.ranker || '—')),
    h('span', {}, 'chosen ', h('b', { class: 'chosen-key' }, d.chosen || 'none')),
    h('span', {}, h('b', {}, String(feasible)), ` feasible of ${cands.length}`),
    d.fallback_reason ? h('span', { class: 'chip warn', title: d.fallback_reason }, 'LLM order discarded') : null);
  const rows = cands.map(c => {
    const chosen = key(c) === d.chosen;
    const fail = (c.verdicts || []).find(v => !v.pass);
    const tr = h('tr', { class: (chosen ? 'chosen ' : '') + (c.feasible ? 'feasible' : 'infeasible'), dataset: { key: key(c) } },
      h('td', { class: 'num' }, c.rank ? String(c.rank) : '—'),
      h('th', { scope: 'row' }, `${c.system} · ${c.partition}`, h('div', { class: 'muted small' }, c.account || 'default account'),
        chosen ? h('span', { class: 'chip ok' }, 'chosen') : null),
      h('td', {}, c.feasible ? h('span', { class: 'pass' }, '✓ feasible') : h('span', { class: 'fail' }, '✗ ', fail ? `${fail.rule}: ${fail.reason}` : (c.sizing_note || 'infeasible'))),
      h('td', {}, sizing(c.sizing), c.sizing_note && c.feasible ? h('div', { class: 'muted small' }, c.sizing_note) : null,
        c.walltime_note && c.feasible ? h('div', { class: 'muted small walltime-note' }, c.walltime_note) : null),
      h('td', { class: 'num' }, c.feasible ? (c.est_wait === '0s' ? 'now' : dur(c.est_wait)) : '—', c.wait_source ? h('div', { class: 'muted small' }, c.wait_source) : null),
      h('td', { class: 'num' }, c.feasible ? (c.cost_su || 0).toFixed(1) : '—'),
      h('td', { class: 'num', title: c.scores ? `wait ${fmt(c.scores.wait)} · size ${fmt(c.scores.size)} · fit ${fmt(c.scores.fit)} · cost ${fmt(c.scores.cost)}` : '' },
        c.feasible && c.scores ? fmt(c.scores.total) : '—',
        c.feasible && c.scores && verdicts ? h('div', { class: 'muted small' }, `w ${fmt(c.scores.wait)} s ${fmt(c.scores.size)} f ${fmt(c.scores.fit)} c ${fmt(c.scores.cost)}`) : null),
      h('td', { class: 'num' }, c.heuristic_rank ? String(c.heuristic_rank) : '—'),
      h('td', { class: 'num', title: c.ai_reason || '' }, c.ai_rank ? String(c.ai_rank) : '—', c.ai_reason && verdicts ? h('div', { class: 'muted small' }, c.ai_reason) : null));
    if (verdicts) {
      tr.children[2].append(h('ul', { class: 'verdicts', 'aria-label': 'rule verdicts' }, (c.verdicts || []).map(v =>
        h('li', {}, h('span', { class: v.pass ? 'pass' : 'fail', 'aria-label': v.pass ? 'pass' : 'fail' }, v.pass ? '✓' : '✗'), h('span', {}, v.rule), h('span', { class: 'muted' }, v.reason || '')))));
    }
    return tr;
  });
  return h('div', { class: 'candidates' }, head, h('p', { class: 'small' }, d.rationale || ''),
    h('div', { class: 'table-wrap' }, h('table', { class: 'cand-table' },
      h('caption', { class: 'sr-only' }, 'Placement candidates'),
      h('thead', {}, h('tr', {}, ['Rank', 'Candidate', verdicts ? 'Rule verdicts' : 'Rules', 'Sizing', 'Est. wait', 'Cost SU', 'Score', 'Heur.', 'AI rank'].map(t => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, rows))));
}

function fmt(x) { return typeof x === 'number' ? x.toFixed(2) : '—'; }
