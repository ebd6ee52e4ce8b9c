// Add resource: the provider slots (simulated, SSH, local, Globus Compute), how many
// systems of each kind this core runs, and the catalog snippet each expects.
import { h, replace, healthDot, toast } from '../dom.js';

const SLOTS = [
  {
    kind: 'sim', title: 'Simulated', what: 'A batch-queue model of a known machine with background load and faults; your jobs run as local processes. Good for trying Mosaic and for tests.',
    snippet: `systems:
  - name: Anvil-sim
    kind: sim
    machine: anvil            # a known shape (delta, vista, …)
    accounts: [demo-anvil-cpu]
    partitions:
      - name: shared
      - name: gpu
        accounts: [demo-anvil-gpu]
    sim:
      max_nodes: 16
      load: {utilization: 0.9, mean_runtime: 2h}`,
  },
  {
    kind: 'ssh', title: 'SSH (Slurm or PBS)', what: 'A login node reached with your OpenSSH setup (~/.ssh/config, agent, ControlMaster). Mosaic runs sinfo/squeue/sbatch (or qstat/qsub) there.',
    snippet: `systems:
  - name: Delta@NCSA
    kind: ssh
    machine: delta            # known shape (optional)
    dialect: slurm            # slurm | pbs
    host: delta               # or an ~/.ssh/config alias
    user: jdoe
    accounts: [bbka-delta-gpu]
    workdir: /scratch/bbka/jdoe/mosaic
    ssh:
      options: [ControlMaster=auto, ControlPersist=10m]`,
  },
  {
    kind: 'local', title: 'Local', what: 'The machine Mosaic runs on, driving its own sbatch/squeue — for a login node or a workstation with Slurm.',
    snippet: `systems:
  - name: Workstation
    kind: local
    partitions:
      - {name: debug, nodes: 2, cpu_cores: 16, memory_gb: 64, gpus: 1,
         gpu_model: A6000, gpu_memory_gb: 48, max_walltime: 4h}`,
  },
  {
    kind: 'globus', title: 'Globus Compute', what: 'A system reached through a Globus Compute endpoint, without SSH: needs the endpoint UUID and a Globus login.',
    snippet: `systems:
  - name: Polaris@ALCF
    kind: globus
    endpoint: 4b116d3c-1703-4f8f-9f6f-39921e5864df
    accounts: [your-project]
    partitions:
      - {name: debug, nodes: 8, cpu_cores: 32, memory_gb: 512, gpus: 4,
         gpu_model: A100, gpu_memory_gb: 40, max_walltime: 1h, exclusive: true}`,
  },
];

export async function render(ctx) {
  const { app, root } = ctx;
  const systems = app.snapshot?.systems || [];
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'Add resource'),
      h('p', { class: 'muted' }, 'Systems come from the site catalog. Add an entry, then restart with ', h('code', {}, 'mosaic serve --sites sites.yaml'), '.')),
    h('div', { class: 'grid' }, SLOTS.map(slot => {
      const mine = systems.filter(x => x.provider === slot.kind);
      const pre = h('pre', { tabindex: '0', 'aria-label': `${slot.title} catalog snippet` }, h('code', {}, slot.snippet));
      const copy = h('button', { class: 'btn', type: 'button' }, 'Copy snippet');
      copy.addEventListener('click', async () => {
        try { await navigator.clipboard.writeText(slot.snippet); toast(`${slot.title} snippet copied`); }
        catch { toast('Copying is blocked here; select the snippet and copy it by hand.', true); }
      });
      return h('article', { class: 'card slot', dataset: { kind: slot.kind } },
        h('div', { class: 'card-head' }, h('h2', {}, slot.title), h('span', { class: 'badge-prov' }, slot.kind),
          h('span', { class: 'chip' + (mine.length ? ' ok' : '') }, mine.length ? `${mine.length} configured` : 'not configured')),
        h('p', {}, slot.what),
        mine.length ? h('ul', { class: 'systems' }, mine.map(x => h('li', {}, h('a', { href: `#/resources/${encodeURIComponent(x.system)}` }, healthDot(x.health), x.system)))) : null,
        h('div', { class: 'snippet' }, pre), h('div', { class: 'actions' }, copy));
    })),
    h('p', { class: 'muted small' }, 'Every field is documented in ', h('code', {}, 'sites.example.yaml'),
      '. Mistakes are reported as file:line: field: what is wrong, and unknown fields are errors.'));
}
