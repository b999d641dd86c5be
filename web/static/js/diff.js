// Diffs of Write and Edit (the diff object of agent.tool.finished and of a
// permission request): unified, or side by side on wide screens. The
// layout follows the screen unless the user picked one (kept in
// localStorage). Every line reaches the page as text.

import { h } from './util.js';

const WIDE = matchMedia('(min-width: 1100px)');
const KEY = 'ferry.diffLayout';
const listeners = new Set();

function preference() {
  try {
    return localStorage.getItem(KEY) || 'auto';
  } catch {
    return 'auto';
  }
}

/** diffLayout is "split" or "unified", as the screen and the user say. */
export function diffLayout() {
  const p = preference();
  if (p === 'split' || p === 'unified') return p;
  return WIDE.matches ? 'split' : 'unified';
}

/** onLayoutChange calls fn whenever diffLayout may have changed. */
export function onLayoutChange(fn) {
  listeners.add(fn);
}

function changed() {
  for (const fn of listeners) fn();
}
WIDE.addEventListener('change', changed);

function setLayout(l) {
  try {
    localStorage.setItem(KEY, l);
  } catch {
    // private mode: the choice lasts for this page only
  }
  changed();
}

/** stats counts the added and deleted lines of a diff. */
export function diffStats(diff) {
  let add = 0;
  let del = 0;
  for (const hk of diff?.hunks || []) {
    for (const l of hk.lines || []) {
      if (l.op === 'add') add++;
      else if (l.op === 'delete') del++;
    }
  }
  return { add, del };
}

function num(n) {
  return h('td', { class: 'ln', 'aria-hidden': 'true', text: n === null ? '' : String(n) });
}

function marker(op) {
  const sign = op === 'add' ? '+' : op === 'delete' ? '−' : ' ';
  const said = op === 'add' ? 'added' : op === 'delete' ? 'removed' : '';
  return h('td', { class: 'mk' }, h('span', { 'aria-hidden': 'true', text: sign }), said ? h('span', { class: 'sr-only', text: said }) : null);
}

function code(text) {
  return h('td', { class: 'code' }, h('span', { text: text === '' ? '\u200b' : text }));
}

const OPCLASS = { add: 'add', delete: 'del', context: 'ctx' };

function unifiedRows(hk) {
  const rows = [];
  let o = hk.old_start;
  let n = hk.new_start;
  for (const l of hk.lines || []) {
    const on = l.op === 'add' ? null : o++;
    const nn = l.op === 'delete' ? null : n++;
    rows.push(h('tr', { class: OPCLASS[l.op] || 'ctx' }, num(on), num(nn), marker(l.op), code(l.text)));
  }
  return rows;
}

function splitRows(hk) {
  const rows = [];
  let o = hk.old_start;
  let n = hk.new_start;
  const lines = hk.lines || [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i].op === 'context') {
      const t = lines[i].text;
      rows.push(h('tr', { class: 'ctx' }, num(o++), marker('context'), code(t), num(n++), marker('context'), code(t)));
      i++;
      continue;
    }
    const dels = [];
    const adds = [];
    while (i < lines.length && lines[i].op === 'delete') dels.push(lines[i++].text);
    while (i < lines.length && lines[i].op === 'add') adds.push(lines[i++].text);
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
      const d = k < dels.length;
      const a = k < adds.length;
      rows.push(h('tr', { class: 'pair' },
        d ? num(o++) : num(null), d ? marker('delete') : h('td', { class: 'mk' }), d ? code(dels[k]) : h('td', { class: 'code none' }),
        a ? num(n++) : num(null), a ? marker('add') : h('td', { class: 'mk' }), a ? code(adds[k]) : h('td', { class: 'code none' })));
      const row = rows[rows.length - 1];
      if (d) row.children[2].classList.add('del');
      if (d) row.children[1].classList.add('del');
      if (a) row.children[5].classList.add('add');
      if (a) row.children[4].classList.add('add');
    }
  }
  return rows;
}

/** renderDiff returns the element showing diff. */
export function renderDiff(diff) {
  // A new file has no old side to show beside the new one.
  const layout = diff.is_new_file ? 'unified' : diffLayout();
  const { add, del } = diffStats(diff);
  const other = layout === 'split' ? 'unified' : 'split';
  const head = h('div', { class: 'diff-head' },
    h('span', { class: 'diff-path', text: diff.path }),
    diff.is_new_file ? h('span', { class: 'badge', text: 'new file' }) : null,
    h('span', { class: 'diff-stat' }, h('span', { class: 'plus', text: `+${add}` }), ' ', h('span', { class: 'minus', text: `−${del}` })),
    diff.is_new_file ? null : h('button', {
      type: 'button', class: 'link diff-toggle', 'aria-label': `Show the diff ${other === 'split' ? 'side by side' : 'unified'}`,
      text: other === 'split' ? 'Side by side' : 'Unified', onclick: () => setLayout(other),
    }));
  const table = h('table', { class: `diff ${layout}`, 'aria-label': `Changes to ${diff.path}: ${add} added, ${del} removed` });
  const hunks = diff.hunks || [];
  hunks.forEach((hk, idx) => {
    const tb = h('tbody');
    if (idx > 0 || hk.old_start > 1) {
      const cols = layout === 'split' ? 6 : 4;
      tb.appendChild(h('tr', { class: 'hunk' }, h('td', { colspan: String(cols), text: `@@ −${hk.old_start},${hk.old_lines} +${hk.new_start},${hk.new_lines} @@` })));
    }
    for (const r of layout === 'split' ? splitRows(hk) : unifiedRows(hk)) tb.appendChild(r);
    table.appendChild(tb);
  });
  const box = h('div', { class: 'diff-box', dataset: { layout } }, head, h('div', { class: 'diff-scroll', tabindex: '0', role: 'region', 'aria-label': `Diff of ${diff.path}` }, table));
  if (diff.truncated) box.appendChild(h('p', { class: 'muted small', text: 'The diff was cut to keep the message small.' }));
  return box;
}
