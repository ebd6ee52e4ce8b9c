// Dark and light themes; the choice is kept in localStorage, the default follows the OS.
const KEY = 'mosaic.theme';

export function currentTheme() {
  const saved = localStorage.getItem(KEY);
  if (saved === 'dark' || saved === 'light') return saved;
  return matchMedia('(prefers-color-scheme: light)').matches ? 'light' : 'dark';
}

export function applyTheme(t) {
  document.documentElement.dataset.theme = t;
  const other = t === 'dark' ? 'light' : 'dark';
  const btn = document.getElementById('theme-btn');
  if (btn) {
    btn.setAttribute('aria-label', `Switch to ${other} theme`);
    btn.title = `Switch to ${other} theme`;
  }
}

export function setTheme(t) {
  localStorage.setItem(KEY, t);
  applyTheme(t);
}
