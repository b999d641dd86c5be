// The agent's todo list (TodoWrite, ferry's agent's and Claude Code's: the
// same input shape) as a checklist pinned above the prompt box. The list
// is the input of the session's last TodoWrite call that finished ok,
// read from agent.tool.started/finished (session.js), so it is rebuilt
// when the history is replayed. One tap folds it to one line: "3/5 ·
// what is being done now"; the choice is kept for the page (every
// session).

import { h, clear, shorten } from './util.js';

const FOLD_KEY = 'ferry.todos.folded';
const STATUS = new Set(['pending', 'in_progress', 'completed']);
const MAX_ITEMS = 100; // what a list may show; more are left out

/**
 * parseTodos reads a TodoWrite input's list; null when it is not one (the
 * call's input is the model's, not checked by the UI's peers).
 */
export function parseTodos(input) {
  const list = input && Array.isArray(input.todos) ? input.todos : null;
  if (!list) return null;
  const out = [];
  for (const t of list.slice(0, MAX_ITEMS)) {
    if (!t || typeof t.content !== 'string') continue;
    out.push({
      content: t.content,
      status: STATUS.has(t.status) ? t.status : 'pending',
      activeForm: typeof t.activeForm === 'string' ? t.activeForm : '',
    });
  }
  return out;
}

/** todoSummary is the folded line: "done/total · current item". */
export function todoSummary(todos) {
  const done = todos.filter((t) => t.status === 'completed').length;
  const cur = todos.find((t) => t.status === 'in_progress');
  const next = todos.find((t) => t.status === 'pending');
  const what = cur ? cur.activeForm || cur.content : next ? `Next: ${next.content}` : 'All done';
  return { done, total: todos.length, what };
}

/** todoLine is a TodoWrite call's summary: "1/5 · current item". */
export function todoLine(input) {
  const todos = parseTodos(input) || [];
  if (!todos.length) return 'cleared the list';
  const s = todoSummary(todos);
  return `${s.done}/${s.total} · ${s.what}`;
}

export class TodoPanel {
  constructor() {
    this.folded = localStorage.getItem(FOLD_KEY) === '1';
    this.key = '';
    this.toggle = h('button', { type: 'button', class: 'todo-toggle', 'aria-expanded': 'true', 'aria-controls': 'todo-items', onclick: () => this.fold(!this.folded) });
    this.list = h('ol', { class: 'todo-items', id: 'todo-items' });
    this.el = h('section', { class: 'todo-panel', 'aria-label': 'Agent todo list', hidden: true }, this.toggle, this.list);
  }

  fold(folded) {
    this.folded = folded;
    localStorage.setItem(FOLD_KEY, folded ? '1' : '0');
    this.draw();
  }

  /** update shows todos (null or empty hides the panel). */
  update(todos) {
    this.todos = todos && todos.length ? todos : null;
    const key = JSON.stringify(this.todos);
    if (key === this.key) return;
    this.key = key;
    this.draw();
  }

  draw() {
    const todos = this.todos;
    this.el.hidden = !todos;
    if (!todos) return;
    const s = todoSummary(todos);
    this.el.dataset.folded = this.folded ? 'true' : 'false';
    this.toggle.setAttribute('aria-expanded', this.folded ? 'false' : 'true');
    clear(this.toggle).append(
      h('span', { class: 'todo-count', text: `${s.done}/${s.total}` }),
      h('span', { class: 'todo-sep', 'aria-hidden': 'true', text: '·' }),
      h('span', { class: 'todo-now', text: this.folded ? shorten(s.what, 120) : 'Todo list' }),
      h('span', { class: 'todo-chevron', 'aria-hidden': 'true', text: this.folded ? '▴' : '▾' }),
    );
    this.list.hidden = this.folded;
    clear(this.list);
    for (const t of todos) {
      const mark = t.status === 'completed' ? '✓' : t.status === 'in_progress' ? '◐' : '○';
      const label = t.status === 'completed' ? 'done' : t.status === 'in_progress' ? 'in progress' : 'to do';
      this.list.appendChild(h('li', { class: `todo s-${t.status}`, dataset: { status: t.status } },
        h('span', { class: 'todo-mark', 'aria-hidden': 'true', text: mark }),
        h('span', { class: 'todo-text', text: t.status === 'in_progress' && t.activeForm ? t.activeForm : t.content }),
        h('span', { class: 'sr-only', text: ` (${label})` })));
    }
  }
}
