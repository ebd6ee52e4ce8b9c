// Settings and About: version, ranker, drafter, tick, store, catalog, rule chain; the
// theme; signing out.
import { h, replace, clock, errorBox, toast } from '../dom.js';
import * as api from '../api.js';
import { currentTheme, setTheme } from '../theme.js';

export async function render(ctx) {
  const { root } = ctx;
  let a;
  try { a = await api.get('/api/about'); } catch (e) { replace(root, errorBox(e)); return; }
  const theme = h('select', { id: 's-theme' }, ['dark', 'light'].map(t => h('option', { value: t, selected: t === currentTheme() }, t)));
  theme.addEventListener('change', () => setTheme(theme.value));
  const signOut = h('button', { class: 'btn danger', type: 'button', id: 'signout-btn' }, 'Sign out of this browser');
  signOut.addEventListener('click', async () => {
    try { await api.post('/api/session/logout'); location.href = '/login'; } catch (e) { toast(e.message, true); }
  });
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'Settings / About')),
    h('div', { class: 'grid' },
      h('section', { class: 'card', 'aria-labelledby': 'about-h' }, h('h2', { id: 'about-h' }, 'This core'), h('p'),
        h('dl', { class: 'facts', id: 'about' },
          h('dt', {}, 'Version'), h('dd', {}, a.version, a.commit ? ` (${a.commit.slice(0, 12)})` : ''),
          h('dt', {}, 'Go'), h('dd', {}, a.go_version || '—'),
          h('dt', {}, 'Ranker'), h('dd', { id: 'about-ranker' }, a.ranker),
          h('dt', {}, 'Envelope drafter'), h('dd', {}, a.drafter),
          h('dt', {}, 'Clock'), h('dd', { id: 'about-clock' }, a.sim ? a.sim.summary : 'real time (no simulated system)'),
          h('dt', {}, 'Probe tick'), h('dd', {}, a.tick),
          h('dt', {}, 'Catalog'), h('dd', { class: 'mono' }, a.catalog),
          h('dt', {}, 'Systems'), h('dd', {}, String(a.systems)),
          h('dt', {}, 'Store'), h('dd', { class: 'mono' }, a.store || 'none'),
          h('dt', {}, 'Started'), h('dd', {}, clock(a.started)))),
      h('section', { class: 'card', 'aria-labelledby': 'rules-h' }, h('h2', { id: 'rules-h' }, 'Rule chain'),
        h('p', { class: 'muted small' }, 'Every candidate passes these in order; the ranker may only order the feasible ones.'),
        h('ol', {}, (a.rules || []).map(r => h('li', { class: 'mono' }, r)))),
      h('section', { class: 'card', 'aria-labelledby': 'pref-h' }, h('h2', { id: 'pref-h' }, 'Preferences'), h('p'),
        h('div', { class: 'field' }, h('label', { for: 's-theme' }, 'Theme'), theme),
        h('p', { class: 'muted small' }, 'The LLM ranker and drafter are configured with ANTHROPIC_API_KEY and MOSAIC_LLM_* in the environment of ', h('code', {}, 'mosaic serve'), '.'),
        h('p', {}, h('a', { href: '/docs' }, 'API documentation'), ' · ', h('a', { href: '/openapi.json' }, 'OpenAPI'), ' · ', h('a', { href: '/metrics' }, 'Prometheus metrics')),
        signOut)));
}
