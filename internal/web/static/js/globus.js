// Globus web sign-in. When `mosaic serve` has a Globus client configured
// (GLOBUS_CLIENT_ID/GLOBUS_CLIENT_SECRET), GET /auth/status answers and, until someone
// signs in, a banner above every view says so: systems reached through Globus Compute
// show needs-login until then, while simulated and SSH-reached systems keep working.
// Signed in, the sidebar shows the Globus identity and a sign-out button. Without a
// client /auth/status answers {"configured": false} (an older server: 404): nothing is
// shown.
import { h, replace, toast } from './dom.js';
import { csrfToken } from './api.js';

const PENDING_KEY = 'mosaic.globus.signingIn';
const REFRESH_MS = 60000;

/** state is the last answer of /auth/status (null: not configured or not asked yet). */
export const state = { status: null };

let needsLogin = [];
let timer = 0;

async function fetchStatus() {
  const r = await fetch('/auth/status', { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } });
  if (r.status === 404) return null;
  if (!r.ok) throw new Error(`Globus sign-in status: HTTP ${r.status}`);
  return r.json();
}

function drawGate(st) {
  const gate = document.getElementById('globus-gate');
  if (!st || !st.configured || st.signed_in) {
    gate.hidden = true;
    gate.replaceChildren();
    return;
  }
  const which = needsLogin.length
    ? [`${needsLogin.join(', ')} ${needsLogin.length === 1 ? 'is' : 'are'} reached through Globus Compute and ${needsLogin.length === 1 ? 'shows' : 'show'} `, h('span', { class: 'chip warn' }, 'needs-login'), ' until you sign in.']
    : ['Systems reached through Globus Compute show ', h('span', { class: 'chip warn' }, 'needs-login'), ' until you sign in.'];
  replace(gate,
    h('div', { class: 'gate-text' },
      h('h2', { id: 'gate-h' }, 'Sign in with Globus'),
      h('p', {}, ...which),
      h('p', { class: 'muted small' }, 'Simulated and SSH-reached systems work meanwhile. The session is stored on this machine only (mode 0600); signing out drops it.')),
    h('a', {
      class: 'btn primary', id: 'globus-signin', href: st.login_url || '/auth/login',
      onclick: () => { try { sessionStorage.setItem(PENDING_KEY, '1'); } catch { /* private mode */ } },
    }, 'Sign in with Globus'));
  gate.hidden = false;
}

function drawAccount(st) {
  const box = document.getElementById('globus-account');
  if (!st || !st.configured || !st.signed_in) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  replace(box,
    h('h2', { class: 'side-h', id: 'globus-h' }, 'Globus'),
    h('p', {}, 'Signed in as ', h('b', { id: 'globus-identity' }, st.identity || 'a Globus identity')),
    h('button', { class: 'btn', type: 'button', id: 'globus-signout', onclick: signOut }, 'Sign out of Globus'));
  box.hidden = false;
}

function draw() {
  drawGate(state.status);
  drawAccount(state.status);
}

/** refresh asks /auth/status again and redraws; it returns the status (null: not configured). */
export async function refresh() {
  try {
    state.status = await fetchStatus();
  } catch (e) {
    console.warn('globus', e.message);
    return state.status;
  }
  draw();
  return state.status;
}

async function signOut(ev) {
  const btn = ev?.currentTarget;
  if (btn) btn.disabled = true;
  try {
    // The redirect to / that follows is not needed here; the page redraws itself.
    const r = await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin', redirect: 'manual', headers: { 'X-Mosaic-CSRF': csrfToken() } });
    if (!r.ok && r.type !== 'opaqueredirect') throw new Error(`signing out of Globus failed: HTTP ${r.status} ${(await r.text()).trim()}`);
    await refresh();
    toast('Signed out of Globus. Systems reached through Globus Compute show needs-login until you sign in again.');
  } catch (e) {
    toast(e.message, true);
    if (btn) btn.disabled = false;
  }
}

/** onSnapshot names the systems waiting for a Globus sign-in in the banner. */
export function onSnapshot(snap) {
  const names = (snap?.systems || []).filter(s => s.health === 'needs-login').map(s => s.system);
  if (names.join('\n') === needsLogin.join('\n')) return;
  needsLogin = names;
  drawGate(state.status);
}

/** start checks the sign-in state and, when Globus is configured, keeps it current. */
export async function start() {
  const st = await refresh();
  let pending = false;
  try { pending = sessionStorage.getItem(PENDING_KEY) === '1'; sessionStorage.removeItem(PENDING_KEY); } catch { /* private mode */ }
  if (!st) return;
  if (pending && st.signed_in) toast(`Signed in to Globus as ${st.identity || 'your Globus identity'}.`);
  if (!timer) {
    timer = setInterval(refresh, REFRESH_MS);
    document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') refresh(); });
  }
}
