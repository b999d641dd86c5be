// Undo and rewind (docs/ui.md): "Undo" on an edit's diff card, "Rewind
// files to here" on a turn, and the session's Changes view (every file the
// agent changed, its combined diff, undo per file). The client checks every
// file first: when one changed since the agent's edit, it refuses, names the
// file and changes nothing; the refusal is shown where the user clicked.
// A successful undo or rewind arrives as agent.files.restored (kept in the
// transcript, so every open view sees it); a rewind of an agent whose
// conversation ferry can rewind also puts that turn's prompt back in the box.
//
// Every control is a button with a visible label (no hover-only controls),
// large enough to tap on a phone.

import { h, clear } from './util.js';
import { message } from './conn.js';
import { renderDiff, diffStats } from './diff.js';
import { restoredText } from './restore.js';

/** refusalText is the message shown for a refused undo or rewind. */
function refusalText(err) {
  if (err.code === 'file_changed') return `Refused: ${err.message}`;
  if (err.code === 'busy') return 'Refused: the agent is working. Undo or rewind once the turn has ended (or stop it).';
  return `Refused: ${err.message || err.code}`;
}

/** changedFiles: turn t recorded a file change (a diff) that is not undone. */
function changedFiles(t) {
  for (const tool of t.tools.values()) if (tool.diff && tool.status === 'ok' && !tool.undone) return true;
  return false;
}

/** HistoryUI drives undo, rewind and the Changes view of one SessionView. */
export class HistoryUI {
  constructor(view) {
    this.view = view;
  }

  get state() {
    return this.view.state;
  }

  /** available: the session's client keeps a file history. */
  available() {
    return !!this.view.machine()?.file_history;
  }

  async request(type, payload) {
    const app = this.view.app;
    if (app.conn.state !== 'open') throw { code: 'connection_lost', message: 'not connected to the master' };
    return app.conn.request(message(type, payload, this.state.id));
  }

  /** toolControls is the undo button (or its outcome) under an edit's diff. */
  toolControls(tool) {
    if (!tool.diff || tool.status !== 'ok' || !this.available()) return null;
    const box = h('div', { class: 'history-actions' });
    if (tool.undone) {
      box.appendChild(h('span', { class: 'small muted undone', text: `Undone: ${tool.diff.path} restored.` }));
      return box;
    }
    box.appendChild(h('button', {
      type: 'button', class: 'btn small-btn undo-btn', // Not disabled while a turn runs: a card is drawn once, and would stay
      // disabled after the turn; the client refuses a busy undo, said plainly.
      disabled: !!tool.undoing,
      'aria-label': `Undo this edit of ${tool.diff.path}`, text: tool.undoing ? 'Undoing…' : 'Undo',
      onclick: () => this.undo(tool),
    }));
    if (tool.undoError) box.appendChild(h('p', { class: 'history-error small', role: 'alert', text: tool.undoError }));
    return box;
  }

  /**
   * turnControls is the rewind button (or its outcome) of an ended turn:
   * "Rewind files" on a turn whose own file changes are recorded and not
   * undone; on another turn, only "Rewind to before this turn" where the
   * agent's conversation can be rewound (rewind_conversation), else none:
   * a turn that changed nothing has no files to rewind.
   */
  turnControls(t) {
    if (!this.available() || t.state === 'running' || t.state === 'waiting' || !t.id) return null;
    const box = h('div', { class: 'history-actions' });
    if (t.filesRewound) {
      box.appendChild(h('span', { class: 'small muted', text: t.rewound ? 'Rewound: files and conversation.' : 'Files rewound.' }));
    } else {
      const label = changedFiles(t) ? 'Rewind files to before this turn'
        : this.view.adapter()?.rewind_conversation ? 'Rewind to before this turn' : '';
      if (!label && !t.rewindError) return null;
      if (label) {
        box.appendChild(h('button', {
          type: 'button', class: 'btn small-btn rewind-btn', disabled: !!t.rewinding,
          'aria-label': label, text: t.rewinding ? 'Rewinding…' : label,
          onclick: () => this.rewind(t),
        }));
      }
    }
    if (t.rewindError) box.appendChild(h('p', { class: 'history-error small', role: 'alert', text: t.rewindError }));
    return box;
  }

  turnOf(tool) {
    for (const t of this.state.turns.values()) if (t.tools.get(tool.id) === tool) return t;
    return null;
  }

  async undo(tool) {
    const t = this.turnOf(tool);
    tool.undoing = true;
    tool.undoError = '';
    if (t) this.state.bumpTool(t, tool);
    this.view.render();
    try {
      const ans = await this.request('control.history.undo', { tool_use_id: tool.id });
      this.view.app.announce(restoredText(ans.payload || {}));
    } catch (e) {
      tool.undoError = refusalText(e);
      this.view.app.announce(tool.undoError);
    }
    tool.undoing = false;
    if (t) this.state.bumpTool(t, tool);
    this.view.render();
    if (this.dialog?.open) this.fill();
  }

  async rewind(t) {
    t.rewinding = true;
    t.rewindError = '';
    this.state.touch(t.key);
    this.view.render();
    try {
      const ans = await this.request('control.history.rewind', { turn_id: t.id });
      const p = ans.payload || {};
      this.view.app.announce(restoredText(p));
      if (p.conversation === 'rewound') this.promptBack(t);
    } catch (e) {
      t.rewindError = refusalText(e);
      this.view.app.announce(t.rewindError);
    }
    t.rewinding = false;
    this.state.touch(t.key);
    this.view.render();
  }

  /** promptBack puts the prompt of turn t back in the box. */
  promptBack(t) {
    const item = this.state.items.find((i) => i.kind === 'prompt' && (i.key === t.promptKey || i.ref?.turnId === t.id));
    const parts = item?.ref?.parts || [];
    const segs = parts.map((p) => {
      if (p.text !== undefined) return { kind: 'text', text: p.text };
      if (p.file?.path) return { kind: 'file', file: { path: p.file.path, display_path: p.display || p.file.path } };
      return { kind: 'text', text: `@${p.display || ''}` };
    });
    if (!segs.length) return;
    this.view.composer.setSegments(segs);
    this.view.composer.focus();
  }

  // The Changes view.

  open() {
    if (!this.dialog) {
      this.list = h('div', { class: 'changes-list' });
      this.status = h('p', { class: 'muted small', role: 'status' });
      this.dialog = h('dialog', { class: 'dialog changes-dialog', 'aria-labelledby': 'changes-title' },
        h('div', { class: 'dialog-head' }, h('h2', { id: 'changes-title', text: 'Changes the agent made' }),
          h('button', { type: 'button', class: 'btn', text: 'Close', onclick: () => this.dialog.close() })),
        this.status, this.list);
      this.view.el.appendChild(this.dialog);
    }
    this.dialog.showModal();
    this.fill();
  }

  async fill() {
    this.status.textContent = 'Loading…';
    let ans;
    try {
      ans = await this.request('control.history.list', {});
    } catch (e) {
      this.status.textContent = `Could not list the changes: ${e.message || e.code}`;
      return;
    }
    this.render(ans.payload || {});
  }

  render(p) {
    const files = p.files || [];
    this.status.textContent = files.length
      ? `${files.length} file${files.length === 1 ? '' : 's'} changed${p.dropped ? '; older changes are no longer kept (the history size quota)' : ''}.`
      : 'The agent has changed no file in this session (or every change was undone).';
    clear(this.list);
    for (const f of files) {
      const st = f.diff ? diffStats(f.diff) : null;
      const err = h('p', { class: 'history-error small', role: 'alert', hidden: true });
      const btn = h('button', {
        type: 'button', class: 'btn small-btn undo-file-btn', 'aria-label': `Undo changes to this file: ${f.path}`,
        text: 'Undo changes to this file',
      });
      btn.addEventListener('click', async () => {
        btn.disabled = true;
        btn.textContent = 'Undoing…';
        err.hidden = true;
        try {
          const ans = await this.request('control.history.undo', { path: f.path });
          this.view.app.announce(restoredText(ans.payload || {}));
          this.fill();
        } catch (e) {
          err.textContent = refusalText(e);
          err.hidden = false;
          btn.disabled = false;
          btn.textContent = 'Undo changes to this file';
        }
      });
      const head = h('div', { class: 'change-head' },
        h('span', { class: 'change-path', text: f.path }),
        f.created ? h('span', { class: 'badge', text: 'new file' }) : null,
        st ? h('span', { class: 'diff-stat small' }, h('span', { class: 'plus', text: `+${st.add}` }), ' ', h('span', { class: 'minus', text: `−${st.del}` })) : null,
        h('span', { class: 'muted small', text: `${f.tool_use_ids.length} edit${f.tool_use_ids.length === 1 ? '' : 's'}` }));
      const item = h('section', { class: 'change', dataset: { path: f.path } }, head,
        f.modified ? h('p', { class: 'warn small', text: `${f.path} changed since the agent's last edit: undo would be refused.` }) : null,
        f.diff ? renderDiff(f.diff) : h('p', { class: 'muted small', text: 'The diff is too large to show here.' }),
        h('div', { class: 'history-actions' }, btn), err);
      this.list.appendChild(item);
    }
  }
}
