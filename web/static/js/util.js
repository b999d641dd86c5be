// Small helpers shared by the UI's modules. Nothing here sets HTML:
// every piece of text reaches the page as a text node.

/**
 * h builds an element. attrs: "class", "text" (textContent), "on*"
 * (listeners), "dataset" (object), boolean and string attributes (false or
 * null leaves an attribute out); children: nodes, strings (as text), arrays,
 * null (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** clear removes every child of el. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/**
 * uuid returns a random UUID v4. crypto.randomUUID exists only in secure
 * contexts; a phone reaching ferry over plain HTTP on a LAN is not one, so
 * the UUID is built from getRandomValues, which works everywhere.
 */
export function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** formatBytes says a size for people: 512 B, 4.2 KB, 1.3 MB. */
export function formatBytes(n) {
  if (typeof n !== 'number' || !isFinite(n) || n < 0) return '';
  if (n < 1000) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = -1;
  do {
    v /= 1000;
    i++;
  } while (v >= 1000 && i < units.length - 1);
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** formatTokens says a token count: 812, 5.3k, 1.2M. */
export function formatTokens(n) {
  if (!n) return '0';
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1000).toFixed(n < 10000 ? 1 : 0)}k`;
  return `${(n / 1e6).toFixed(1)}M`;
}

/** formatCost says a cost in US dollars. */
export function formatCost(usd) {
  if (typeof usd !== 'number') return '';
  if (usd === 0) return '$0';
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** formatDuration says a duration in milliseconds: 45 s, 4:05, 1 h 02 min. */
export function formatDuration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** formatWhen says when something happened, relative for the recent past. */
export function formatWhen(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (!isFinite(t)) return '';
  const d = (now - t) / 1000;
  if (d < 45) return 'just now';
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return new Date(t).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

/** debounce calls fn once calls stopped for ms. */
export function debounce(fn, ms) {
  let t = 0;
  const d = (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
  d.cancel = () => clearTimeout(t);
  return d;
}

/**
 * frameThrottle calls fn at most once per animation frame (or every 100 ms
 * when the page is hidden and frames stop).
 */
export function frameThrottle(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    const run = () => {
      if (!pending) return;
      pending = false;
      fn();
    };
    if (document.hidden) setTimeout(run, 100);
    else requestAnimationFrame(run);
  };
}

/** shorten folds white space and cuts s to n characters. */
export function shorten(s, n) {
  const t = String(s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

/**
 * relativePath is p inside the workspace root as a workspace-relative path
 * ("src/a.go"); a path outside it (or no root) stays as it is.
 */
export function relativePath(p, root) {
  const path = String(p ?? '');
  const r = String(root ?? '').replace(/\/+$/, '');
  if (!r || !path.startsWith('/')) return path;
  if (path === r) return '.';
  return path.startsWith(`${r}/`) ? path.slice(r.length + 1) : path;
}

/**
 * instructionPath is an instruction file's path as the settings sheet
 * shows it: relative to the workspace when the file is in it or in a
 * folder above it, in full otherwise (the user's own file).
 */
export function instructionPath(path, root) {
  const r = String(root || '').replace(/\/+$/, '');
  if (!r) return path;
  const dir = path.slice(0, path.lastIndexOf('/'));
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (path.startsWith(`${r}/`)) return path.slice(r.length + 1);
  if (r !== dir && !r.startsWith(`${dir}/`)) return path;
  const up = r.slice(dir.length).split('/').filter(Boolean).length;
  return `${'../'.repeat(up)}${name}`;
}

/**
 * shortenPath cuts a path to n characters from the LEFT, at a directory
 * when it can ("…/dir/file.go"), so the file name stays.
 */
export function shortenPath(p, n) {
  const t = String(p ?? '');
  if (t.length <= n) return t;
  const tail = t.slice(t.length - (n - 1));
  const cut = tail.indexOf('/');
  return cut >= 0 && cut < tail.length - 1 ? `…${tail.slice(cut)}` : `…${tail}`;
}

/**
 * toolPath is the path a tool works on, relative to the workspace root,
 * or '' when its summary is not a path (a command, a pattern, a URL).
 */
export function toolPath(input, root) {
  const i = input || {};
  const p = i.file_path || i.path || i.notebook_path || '';
  return p ? relativePath(p, root) : '';
}

/**
 * settingRow is one labelled setting of the settings sheet: its visible
 * label (the control's name), the control, and a line of help.
 */
export function settingRow(label, id, control, help = '') {
  return h('div', { class: 'setting-row' },
    h('label', { for: id, text: label }), control, help ? h('p', { class: 'muted small', text: help }) : null);
}
