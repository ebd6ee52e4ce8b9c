// The launch sheet: three steps — task and command, resource envelope (every field
// `mosaic submit` has, by hand or drafted by the agent, drafted fields marked, with the
// draft's source and confidence), run location (Auto: the meta-scheduler; Pin: a
// system and optional partition) with the envelope to submit — and the dry-run
// candidate table before anything is submitted.
import { h, replace, toast, errorBox, dur } from '../dom.js';
import * as api from '../api.js';
import { candidateTable } from './candidates.js';
import { speedOf, speedText, realTime } from '../simclock.js';

const OBJECTIVES = [['earliest_start', 'Earliest start'], ['fastest_finish', 'Fastest finish'], ['max_throughput', 'Max throughput'], ['min_cost', 'Min cost (SU)']];

const RUNTIMES = [['', 'site default'], ['apptainer', 'apptainer'], ['singularity', 'singularity']];

// list reads a comma-separated field: "A100, H100" → ['A100', 'H100'].
const list = (v) => String(v || '').split(',').map(x => x.trim()).filter(Boolean);

export function openLaunch(app, opts = {}) {
  const dlg = document.getElementById('sheet');
  if (dlg.open) dlg.close();
  const st = { step: 1, draft: null, draftSnapshot: '', dry: null };
  const field = (id, label, el, hint) => h('div', { class: 'field', dataset: { field: id } },
    h('label', { for: id }, label, h('span', { class: 'draft-tag', hidden: true }, 'drafted')), el,
    hint ? h('div', { class: 'muted small', id: `${id}-hint` }, hint) : null);
  const num = (id, v, extra = {}) => h('input', { id, type: 'number', min: 0, inputmode: 'numeric', value: v, ...extra });
  const text = (id, extra = {}) => h('input', { id, autocomplete: 'off', spellcheck: 'false', ...extra });

  // Step 1
  const name = h('input', { id: 'l-name', required: true, maxlength: 128, value: opts.name || '', autocomplete: 'off' });
  const command = h('textarea', { id: 'l-command', required: true, spellcheck: 'false', placeholder: 'python train.py --epochs 3' }, opts.command || '');
  const desc = h('textarea', { id: 'l-desc', placeholder: 'Fine-tune a 7B model on 4 A100s for about 3 hours' }, opts.description || '');
  // Step 2: every envelope field `mosaic submit` has.
  const systems = (app.snapshot?.systems || []).map(s => s.system);
  const e = {
    gpusMin: num('l-gpus-min', opts.gpus ?? 0), gpusMax: num('l-gpus-max', opts.gpus ?? 0),
    cpuMin: num('l-cpu-min', 1), cpuMax: num('l-cpu-max', 4),
    memMin: num('l-mem-min', ''), memMax: num('l-mem-max', ''),
    wallMin: h('input', { id: 'l-wall-min', value: '10m', 'aria-describedby': 'l-wall-hint' }),
    wallMax: h('input', { id: 'l-wall-max', value: '1h', 'aria-describedby': 'l-wall-hint' }),
    nodesMin: num('l-nodes-min', 1, { min: 1 }), nodesMax: num('l-nodes-max', 1, { min: 1 }),
    gpuModel: text('l-gpu-model', { placeholder: 'any (e.g. A100, H100, GH200)', title: 'comma-separated', list: 'l-models' }),
    avoidGPU: text('l-avoid-gpu', { placeholder: 'none (e.g. MI100)', list: 'l-models' }),
    gpuMem: num('l-gpu-mem', '', { max: 1024, placeholder: 'no minimum' }),
    arch: h('select', { id: 'l-arch' }, h('option', { value: '' }, 'any'), h('option', { value: 'x86_64' }, 'x86_64'), h('option', { value: 'aarch64' }, 'aarch64')),
    container: text('l-container', { placeholder: 'none (docker://… or a .sif path)' }),
    runtime: h('select', { id: 'l-runtime' }, RUNTIMES.map(([v, t]) => h('option', { value: v }, t))),
    features: text('l-features', { placeholder: 'none (e.g. gh200, nvlink)' }),
    maxWait: text('l-max-wait', { placeholder: 'none (e.g. 45m)' }),
    objective: h('select', { id: 'l-objective' }, OBJECTIVES.map(([v, t]) => h('option', { value: v }, t))),
  };
  const avoidBox = h('div', { class: 'checks', id: 'l-avoid-systems' });
  const addAvoid = (sys, checked) => {
    const id = `l-avoid-${avoidBox.children.length}`;
    avoidBox.append(h('label', { for: id, class: 'check' }, h('input', { type: 'checkbox', id, value: sys, checked }), sys));
  };
  systems.forEach(s => addAvoid(s, false));
  const avoidChecks = () => [...avoidBox.querySelectorAll('input[type=checkbox]')];
  const models = [...new Set((app.snapshot?.records || []).map(r => r.gpu_model).filter(Boolean))].sort();
  const draftNote = h('div', { id: 'draft-note', 'aria-live': 'polite' });
  const draftBtn = h('button', { class: 'btn', type: 'button', id: 'draft-btn' }, 'Draft with agent');
  // Step 3
  const auto = h('input', { type: 'radio', name: 'where', value: 'auto', id: 'l-auto', checked: !opts.pin });
  const pin = h('input', { type: 'radio', name: 'where', value: 'pin', id: 'l-pin', checked: !!opts.pin });
  const pinSys = h('select', { id: 'l-pin-system' }, systems.map(s => h('option', { value: s, selected: s === opts.pin }, s)));
  const pinPart = h('select', { id: 'l-pin-partition' });
  const fillParts = () => {
    const parts = [...new Set((app.snapshot?.records || []).filter(r => r.system === pinSys.value).map(r => r.partition))];
    replace(pinPart, h('option', { value: '' }, 'any partition (the rules choose)'), parts.map(p => h('option', { value: p, selected: p === opts.partition }, p)));
  };
  fillParts();
  pinSys.addEventListener('change', () => { opts.partition = ''; fillParts(); invalidate(); });
  const pinBox = h('fieldset', { id: 'pin-box' }, h('legend', {}, 'Pin to'), h('div', { class: 'row' },
    field('l-pin-system', 'System', pinSys), field('l-pin-partition', 'Partition (optional)', pinPart)));
  const summary = h('dl', { class: 'env-summary', id: 'env-summary' });
  const dryOut = h('div', { id: 'dry-out', 'aria-live': 'polite' });
  const dryBtn = h('button', { class: 'btn', type: 'button', id: 'dry-btn' }, 'Preview placement');
  const err = h('div', { id: 'sheet-error' });

  const steps = [
    h('section', { 'aria-label': 'Step 1: task and command', dataset: { step: 1 } },
      field('l-name', 'Task name', name),
      field('l-command', 'Command', command, 'A shell command line run in the job; your environment script is sourced first.'),
      field('l-desc', 'Description (optional: lets the agent draft the envelope)', desc)),
    h('section', { 'aria-label': 'Step 2: resource envelope', dataset: { step: 2 } },
      h('p', { class: 'muted' }, 'A range: the least the task can run with, and the most it can use. Mosaic sizes the job inside it.'),
      h('div', { class: 'toolbar' }, draftBtn, h('span', { class: 'muted small' }, 'uses the description, or the command if there is none')),
      draftNote,
      h('datalist', { id: 'l-models' }, models.map(m => h('option', { value: m }))),
      h('fieldset', {}, h('legend', {}, 'Size'),
        h('div', { class: 'row' }, field('l-gpus-min', 'GPUs min', e.gpusMin), field('l-gpus-max', 'GPUs max', e.gpusMax),
          field('l-cpu-min', 'CPU cores min', e.cpuMin), field('l-cpu-max', 'CPU cores max', e.cpuMax)),
        h('div', { class: 'row' }, field('l-mem-min', 'Memory GB min', e.memMin), field('l-mem-max', 'Memory GB max', e.memMax),
          field('l-nodes-min', 'Nodes min', e.nodesMin), field('l-nodes-max', 'Nodes max', e.nodesMax)),
        h('div', { class: 'row' }, field('l-wall-min', 'Walltime min', e.wallMin), field('l-wall-max', 'Walltime max', e.wallMax)),
        h('div', { class: 'muted small', id: 'l-wall-hint' }, 'Walltimes: 30m, 2h, 1:30:00 or 1-00:00:00. Totals for the whole job; empty memory = the site default.')),
      h('fieldset', {}, h('legend', {}, 'GPUs'),
        h('div', { class: 'row' }, field('l-gpu-model', 'GPU models', e.gpuModel),
          field('l-avoid-gpu', 'Avoid GPU models', e.avoidGPU), field('l-gpu-mem', 'GPU memory ≥ GB per GPU', e.gpuMem)),
        h('div', { class: 'muted small' }, 'A100 takes 40 and 80 GB A100s, A100-80GB only 80 GB ones; GH200 means an H100-class GPU on an aarch64 Grace host.')),
      h('fieldset', {}, h('legend', {}, 'Where and how'),
        h('div', { class: 'row' }, field('l-arch', 'Arch', e.arch), field('l-objective', 'Objective', e.objective),
          field('l-max-wait', 'Max queue wait (then move)', e.maxWait), field('l-features', 'Required features', e.features)),
        h('div', { class: 'row' }, field('l-container', 'Container image', e.container), field('l-runtime', 'Container runtime', e.runtime)),
        h('div', { class: 'field', dataset: { field: 'l-avoid-systems' } }, h('span', { class: 'label' }, 'Never place on',
          h('span', { class: 'draft-tag', hidden: true }, 'drafted')), avoidBox))),
    h('section', { 'aria-label': 'Step 3: run location', dataset: { step: 3 } },
      h('div', { class: 'choice', role: 'radiogroup', 'aria-label': 'Run location' },
        h('label', { for: 'l-auto' }, auto, 'Auto — the meta-scheduler chooses'),
        h('label', { for: 'l-pin' }, pin, 'Pin — a system I choose')),
      pinBox,
      h('details', { class: 'env-details' }, h('summary', {}, 'The envelope to submit'), summary),
      h('div', { class: 'toolbar' }, dryBtn, h('span', { class: 'muted small' }, 'Runs every rule and the ranker without submitting.')),
      dryOut),
  ];
  const stepList = h('ol', { class: 'steps', 'aria-label': 'Steps' },
    ['Task', 'Envelope', 'Run location'].map((t, i) => h('li', { dataset: { n: i + 1 } }, `${i + 1}. ${t}`)));
  const back = h('button', { class: 'btn', type: 'button', id: 'back-btn' }, 'Back');
  const next = h('button', { class: 'btn primary', type: 'button', id: 'next-btn' }, 'Next');
  const submit = h('button', { class: 'btn primary', type: 'button', id: 'submit-btn', disabled: true, hidden: true }, 'Submit');
  const closeBtn = h('button', { class: 'icon-btn close', type: 'button', 'aria-label': 'Close' }, '✕');

  replace(dlg,
    h('div', { class: 'sheet-head' }, h('h2', { id: 'sheet-title' }, 'Launch task'), stepList, closeBtn),
    h('form', { method: 'dialog', id: 'launch-form', novalidate: true },
      h('div', { class: 'sheet-body' }, err, steps),
      h('div', { class: 'sheet-foot' }, back, next, submit)));

  const LAST = steps.length;
  const show = () => {
    st.step = Math.min(Math.max(st.step, 1), LAST);
    steps.forEach((s, i) => { s.hidden = i + 1 !== st.step; });
    for (const li of stepList.children) {
      if (Number(li.dataset.n) === st.step) li.setAttribute('aria-current', 'step');
      else li.removeAttribute('aria-current');
    }
    back.disabled = st.step === 1;
    next.hidden = st.step === LAST;
    submit.hidden = st.step !== LAST;
    pinBox.hidden = !pin.checked;
    if (st.step === LAST) drawSummary();
    replace(err);
    steps[st.step - 1]?.querySelector('input, textarea, select, button')?.focus();
  };
  const invalidate = () => { st.dry = null; submit.disabled = true; replace(dryOut); };

  const envelope = () => {
    const n = (el) => el.value === '' ? 0 : Number(el.value);
    const rng = (a, b) => { const r = {}; if (n(a)) r.min = n(a); if (n(b)) r.max = n(b); return r; };
    const env = {
      gpus: rng(e.gpusMin, e.gpusMax), cpu_cores: rng(e.cpuMin, e.cpuMax), memory_gb: rng(e.memMin, e.memMax),
      walltime: {}, nodes: rng(e.nodesMin, e.nodesMax), objective: e.objective.value, constraints: {},
    };
    if (e.wallMin.value.trim()) env.walltime.min = e.wallMin.value.trim();
    if (e.wallMax.value.trim()) env.walltime.max = e.wallMax.value.trim();
    if (e.maxWait.value.trim()) env.max_queue_wait = e.maxWait.value.trim();
    const c = env.constraints;
    if (list(e.gpuModel.value).length) c.gpu_models = list(e.gpuModel.value);
    if (list(e.avoidGPU.value).length) c.avoid_gpu_models = list(e.avoidGPU.value);
    if (n(e.gpuMem)) c.min_gpu_memory_gb = n(e.gpuMem);
    if (e.arch.value) c.arch = [e.arch.value];
    if (e.container.value.trim()) c.container = { image: e.container.value.trim(), runtime: e.runtime.value || undefined };
    if (list(e.features.value).length) c.features = list(e.features.value);
    const avoid = avoidChecks().filter(x => x.checked).map(x => x.value);
    if (avoid.length) c.avoid_systems = avoid;
    if (st.draft && snapshotFields() === st.draftSnapshot) {
      env.source = st.draft.source; env.confidence = st.draft.confidence; env.rationale = st.draft.rationale;
    }
    return env;
  };
  const snapshotFields = () => Object.values(e).map(x => x.value).concat(avoidChecks().map(x => `${x.value}=${x.checked}`)).join('|');
  const target = () => pin.checked ? (pinPart.value ? `${pinSys.value}:${pinPart.value}` : pinSys.value) : undefined;
  const request = (dry) => ({
    name: name.value.trim(), command: command.value, description: desc.value.trim() || undefined,
    envelope: envelope(), target: target(), dry_run: dry || undefined,
  });

  // drawSummary lists, on the last step, every constraint the submission carries.
  const drawSummary = () => {
    const env = envelope();
    const r = (x) => x.min || x.max ? `${x.min ?? '—'} – ${x.max ?? x.min}` : 'default';
    const c = env.constraints;
    const rows = [
      ['GPUs', r(env.gpus)], ['CPU cores', r(env.cpu_cores)], ['Memory GB', r(env.memory_gb)], ['Nodes', r(env.nodes)],
      ['Walltime', `${env.walltime.min || '—'} – ${env.walltime.max || env.walltime.min || '—'}`],
      ['GPU models', (c.gpu_models || []).join(', ') || 'any'], ['Avoid GPU models', (c.avoid_gpu_models || []).join(', ') || 'none'],
      ['GPU memory', c.min_gpu_memory_gb ? `≥ ${c.min_gpu_memory_gb} GB` : 'no minimum'], ['Arch', (c.arch || []).join(', ') || 'any'],
      ['Container', c.container ? `${c.container.image}${c.container.runtime ? ` (${c.container.runtime})` : ''}` : 'none'],
      ['Features', (c.features || []).join(', ') || 'none'], ['Never on', (c.avoid_systems || []).join(', ') || 'no system avoided'],
      ['Max queue wait', env.max_queue_wait || 'none'], ['Objective', env.objective],
      ['Run location', target() || 'auto'], ['Source', env.source ? `${env.source} (${Math.round((env.confidence || 0) * 100)}%)` : 'user'],
    ];
    replace(summary, rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', { dataset: { key: k } }, v)]));
  };

  draftBtn.addEventListener('click', async () => {
    const text = desc.value.trim() || command.value.trim();
    if (!text) { replace(draftNote, h('div', { class: 'alert', role: 'alert' }, 'Write a description or a command first: the agent drafts from it.')); return; }
    draftBtn.disabled = true;
    replace(draftNote, h('p', { class: 'muted' }, 'Drafting…'));
    try {
      const r = await api.post('/api/envelope/generate', { name: name.value.trim(), description: text });
      const env = r.envelope || {};
      const c = env.constraints || {};
      for (const t of steps[1].querySelectorAll('.draft-tag')) t.hidden = true;
      const set = (el, v) => {
        el.value = v === undefined || v === null || v === 0 || v === '0s' ? '' : v;
        if (el.value !== '') el.closest('.field')?.querySelector('.draft-tag')?.removeAttribute('hidden');
      };
      set(e.gpusMin, env.gpus?.min); set(e.gpusMax, env.gpus?.max ?? env.gpus?.min);
      set(e.cpuMin, env.cpu_cores?.min); set(e.cpuMax, env.cpu_cores?.max ?? env.cpu_cores?.min);
      set(e.memMin, env.memory_gb?.min); set(e.memMax, env.memory_gb?.max);
      set(e.wallMin, env.walltime?.min); set(e.wallMax, env.walltime?.max);
      set(e.nodesMin, env.nodes?.min || 1); set(e.nodesMax, env.nodes?.max || env.nodes?.min || 1);
      set(e.gpuModel, (c.gpu_models || []).join(', ')); set(e.avoidGPU, (c.avoid_gpu_models || []).join(', '));
      set(e.gpuMem, c.min_gpu_memory_gb);
      set(e.arch, (c.arch || [])[0] || '');
      set(e.container, c.container?.image); set(e.runtime, c.container?.runtime || '');
      set(e.features, (c.features || []).join(', '));
      set(e.maxWait, env.max_queue_wait);
      if (env.objective) set(e.objective, env.objective);
      const avoid = c.avoid_systems || [];
      for (const s of avoid) if (!avoidChecks().some(x => x.value === s)) addAvoid(s, true);
      for (const x of avoidChecks()) x.checked = avoid.includes(x.value);
      if (avoid.length) avoidBox.closest('.field')?.querySelector('.draft-tag')?.removeAttribute('hidden');
      st.draft = env;
      st.draftSnapshot = snapshotFields();
      replace(draftNote, h('div', { class: 'draft-note', id: 'draft-result' },
        h('div', {}, 'Drafted by ', h('b', { class: 'draft-source' }, env.source || 'heuristic'), ` (${r.drafter})`, ' · confidence ',
          h('b', { class: 'draft-confidence' }, `${Math.round((env.confidence || 0) * 100)}%`)),
        env.rationale ? h('div', { class: 'muted' }, env.rationale) : null,
        r.fallback_reason ? h('div', { class: 'muted' }, `LLM draft not used: ${r.fallback_reason}`) : null,
        h('div', { class: 'muted small' }, 'Fields marked drafted came from the draft. Edit any field; an edited envelope is submitted as yours.')));
      invalidate();
    } catch (x) { replace(draftNote, errorBox(x)); }
    finally { draftBtn.disabled = false; }
  });

  dryBtn.addEventListener('click', async () => {
    dryBtn.disabled = true;
    replace(dryOut, h('p', { class: 'muted' }, 'Placing…'));
    try {
      const r = await api.post('/api/tasks', request(true));
      st.dry = r.decision;
      replace(dryOut, candidateTable(r.decision), simNote(app.about, r.decision));
      submit.disabled = false;
    } catch (x) {
      st.dry = null; submit.disabled = true;
      replace(dryOut, errorBox(x));
    } finally { dryBtn.disabled = false; }
  });

  for (const el of [auto, pin]) el.addEventListener('change', () => { pinBox.hidden = !pin.checked; invalidate(); drawSummary(); });
  pinPart.addEventListener('change', () => { invalidate(); drawSummary(); });
  steps[1].addEventListener('input', invalidate);
  steps[1].addEventListener('change', invalidate);

  const validStep = () => {
    if (st.step === 1) {
      if (!name.value.trim()) { replace(err, errorBox('Give the task a name.')); name.focus(); return false; }
      if (!command.value.trim()) { replace(err, errorBox('Give the command the job runs.')); command.focus(); return false; }
    }
    if (st.step === 2 && !e.wallMin.value.trim()) { replace(err, errorBox('Walltime min is required: how long the task needs at least.')); e.wallMin.focus(); return false; }
    return true;
  };
  next.addEventListener('click', () => { if (st.step < LAST && validStep()) { st.step++; show(); } });
  back.addEventListener('click', () => { if (st.step > 1) { st.step--; show(); } });
  closeBtn.addEventListener('click', () => dlg.close());
  submit.addEventListener('click', async () => {
    if (!st.dry || st.step !== LAST) return;
    submit.disabled = true;
    try {
      const r = await api.post('/api/tasks', request(false));
      dlg.close();
      toast(`Submitted ${r.task.name}: placed on ${r.decision.chosen}`);
      location.hash = `#/tasks/${r.task.id}`;
    } catch (x) {
      replace(err, errorBox(x));
      submit.disabled = false;
    }
  });
  dlg.addEventListener('close', () => document.getElementById('launch-btn')?.focus(), { once: true });
  dlg.showModal();
  show();
}

// simNote says, under the dry-run table, what the chosen walltime and wait mean in real
// time when the chosen system is simulated (at 60× a 1h walltime ends after a minute).
function simNote(about, d) {
  const ch = (d?.candidates || []).find(c => `${c.system}/${c.partition}/${c.account}` === d.chosen);
  const speed = speedOf(about, ch?.system);
  if (!speed || !d.spec) return null;
  return h('p', { class: 'muted small', id: 'dry-sim-note' },
    `${ch.system} is simulated at ${speedText(speed)}: walltime ${dur(d.spec.walltime)} takes ${realTime(d.spec.walltime, speed)} real time, `,
    `estimated wait ${dur(ch.est_wait) === '—' ? '0s' : dur(ch.est_wait)} takes ${realTime(ch.est_wait, speed)}.`);
}
