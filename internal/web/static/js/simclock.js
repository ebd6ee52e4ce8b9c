// The simulated clock made visible. Simulated systems run faster than the wall clock
// (GET /api/about → sim: {speed, systems, summary}); their walltimes, waits and
// estimates are simulated time, so at 60× a 1h walltime ends after a real minute.
// These helpers give real-time equivalents, formatted like the core's RealTime.
import { h, replace } from './dom.js';

/** speedOf is the speed-up of system (0 when it is not simulated). */
export function speedOf(about, system) {
  return (system && about?.sim?.systems?.[system]) || 0;
}

/** speedText renders a speed-up factor: "60×", "2.5×". */
export function speedText(speed) {
  return `${Number(speed.toFixed(3))}×`;
}

/** seconds reads a Go duration string ("1h30m0s", "45s", "250ms") or a number of seconds. */
export function seconds(v) {
  if (typeof v === 'number') return v;
  if (!v) return 0;
  const unit = { h: 3600, m: 60, s: 1, ms: 1e-3, 'µs': 1e-6, us: 1e-6, ns: 1e-9 };
  let total = 0;
  for (const [, n, u] of String(v).matchAll(/([\d.]+)(ms|µs|us|ns|h|m|s)/g)) total += Number(n) * unit[u];
  return total;
}

/** human renders seconds the way the core does: "1h", "1m30s", "1.7s", "83ms", "<1ms". */
export function human(sec) {
  if (!(sec > 0)) return '0s';
  if (sec < 0.001) return '<1ms';
  if (sec < 1) return `${Math.round(sec * 1000)}ms`;
  if (sec < 60) return `${Math.round(sec * 10) / 10}s`;
  const t = Math.round(sec);
  const hh = Math.floor(t / 3600), mm = Math.floor((t % 3600) / 60), ss = t % 60;
  let out = `${hh ? hh + 'h' : ''}${hh || mm ? mm + 'm' : ''}${ss}s`;
  if (out.endsWith('m0s')) out = out.slice(0, -2);
  if (out.endsWith('h0m')) out = out.slice(0, -2);
  return out;
}

/** realTime is how long simulated duration v (Go string or seconds) takes at speed. */
export function realTime(v, speed) {
  return human(seconds(v) / speed);
}

/** showBadge shows the speed in the top bar when any system is simulated. */
export function showBadge(about) {
  const el = document.getElementById('sim-clock');
  if (!el) return;
  const sc = about?.sim;
  el.hidden = !sc;
  if (!sc) return;
  replace(el, h('span', { class: 'sim-word' }, 'simulated '), speedText(sc.speed));
  el.title = sc.summary;
  el.setAttribute('aria-label', sc.summary);
}
