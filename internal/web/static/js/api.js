// The page's client of /api. The session cookie (HttpOnly, set by /login) authenticates
// every call; state-changing calls also carry the session's CSRF token.

let csrf = '';

export class ApiError extends Error {
  constructor(status, detail, body) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** session fetches the CSRF token; it returns false when the browser is not signed in. */
export async function session() {
  const r = await fetch('/api/session', { credentials: 'same-origin' });
  if (r.status === 401) return false;
  if (!r.ok) throw new ApiError(r.status, `session: HTTP ${r.status}`);
  const s = await r.json();
  csrf = s.csrf_token || '';
  return s;
}

/** csrfToken is the session's CSRF token, for state-changing calls outside /api. */
export const csrfToken = () => csrf;

async function call(method, path, body) {
  const opt = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (method !== 'GET') opt.headers['X-Mosaic-CSRF'] = csrf;
  if (body !== undefined) {
    opt.headers['Content-Type'] = 'application/json';
    opt.body = JSON.stringify(body);
  }
  const r = await fetch(path, opt);
  if (r.status === 204) return null;
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!r.ok) {
    let detail = (data && (data.detail || data.title)) || text || `HTTP ${r.status}`;
    if (data && Array.isArray(data.errors) && data.errors.length) {
      detail += ': ' + data.errors.map(e => [e.location, e.message].filter(Boolean).join(' ')).join('; ');
    }
    if (r.status === 401) detail = 'Signed out: open the login link `mosaic serve` printed. ' + detail;
    throw new ApiError(r.status, detail, data);
  }
  return data;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body === undefined ? {} : body);

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== '' && v !== undefined && v !== null) u.set(k, v);
  }
  const q = u.toString();
  return q ? `?${q}` : '';
}

export const enc = encodeURIComponent;

/**
 * latestEvents returns the newest n events matching params (at most 10000), oldest
 * first: /api/events answers newest first, so one call is enough.
 */
export async function latestEvents(params, n) {
  const r = await get('/api/events' + qs({ ...params, limit: Math.min(n, 10000) }));
  return (r.events || []).reverse();
}
