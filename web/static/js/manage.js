// Managing one session from its header's menu: rename inline, archive or
// unarchive, delete after a confirmation. Each sends ui.session.rename,
// ui.session.archive or ui.session.delete and waits for the master's
// master.session.changed; the app applies that answer (and the same news
// told to other UIs) to its lists and views (App.applyChange). Every
// control is a menu item, touch-sized on phones: nothing hides behind a
// hover.

import { h, clear } from './util.js';
import { message } from './conn.js';
import { CODES } from './codes.js';
import { unshippedLoss } from './worktree.js';

/** MAX_TITLE mirrors protocol.MaxTitleRunes. */
export const MAX_TITLE = 200;

// A character no name may hold (protocol.HiddenRune): control (Cc), format
// (Cf: bidirectional controls, zero-width characters, the byte-order mark,
// tags), line and paragraph separators, and Unicode's other
// default-ignorable code points (listed: JavaScript has no property for
// them). The master refuses them (protocol.CleanTitle), so the form says
// so first.
const BAD_TITLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u2065\u3164\uffa0\ufff0-\ufff8\u{e0000}-\u{e00ff}\u{e01f0}-\u{e0fff}]/u;

// The white space Go's strings.TrimSpace trims (unicode.IsSpace), which
// differs from String.prototype.trim (U+0085 in, U+FEFF out).
const SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const EDGES = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g');

/**
 * cleanTitle is a title a person typed as the master takes it
 * (protocol.CleanTitle): trimmed, and what is wrong with it ('' when
 * nothing).
 */
export function cleanTitle(title) {
  const t = title.replace(EDGES, '');
  if ([...t].length > MAX_TITLE) return { title: t, problem: `A title has at most ${MAX_TITLE} characters.` };
  if (BAD_TITLE.test(t)) return { title: t, problem: 'A title cannot hold control characters or invisible formatting (such as zero-width or right-to-left marks).' };
  return { title: t, problem: '' };
}

/**
 * confirmUnshipped asks before archiving or deleting isolated sessions
 * with unshipped work, naming for each what is lost, with "also delete
 * the branch". It resolves {deleteBranch} when confirmed, null otherwise.
 */
export function confirmUnshipped(container, infos, verb) {
  return new Promise((resolve) => {
    const del = h('input', { type: 'checkbox', id: 'unshipped-branch' });
    const list = h('ul', { class: 'wt-loss' });
    const draw = () => {
      clear(list);
      for (const s of infos) {
        const l = unshippedLoss(s.worktree, del.checked);
        list.appendChild(h('li', {}, h('strong', { text: s.title || 'Untitled session' }), `: ${l.what}. Lost: ${l.lost}.`));
      }
    };
    del.addEventListener('change', draw);
    draw();
    let answer = null;
    const n = infos.length;
    const d = h('dialog', { class: 'dialog', id: 'unshipped-dialog', 'aria-labelledby': 'unshipped-title' },
      h('div', { class: 'dialog-head' }, h('h2', { id: 'unshipped-title', text: `${verb} ${n === 1 ? 'a session' : `${n} sessions`} with unshipped changes?` })),
      h('p', { text: `${verb === 'Delete' ? 'Deleting' : 'Archiving'} removes the worktree folder${n === 1 ? '' : 's'}; what is not in the base branch is listed here.` }),
      list,
      h('div', { class: 'wt-check' }, del, h('label', { for: 'unshipped-branch', text: n === 1 ? 'Also delete the branch' : 'Also delete the branches' })),
      h('div', { class: 'q-actions' },
        h('button', { type: 'button', class: 'btn', id: 'unshipped-cancel', text: 'Cancel', onclick: () => d.close() }),
        h('button', { type: 'button', class: 'btn danger', id: 'unshipped-confirm', text: `${verb} and discard`, onclick: () => { answer = { deleteBranch: del.checked }; d.close(); } })));
    d.addEventListener('close', () => {
      d.remove();
      resolve(answer);
    });
    container.appendChild(d);
    d.showModal();
    d.querySelector('#unshipped-cancel').focus();
  });
}

/** errorText is a refusal as a person reads it. */
function errorText(err) {
  const why = CODES[err.code];
  return why && why !== err.message ? `${err.message} (${why})` : err.message || err.code;
}

export class SessionActions {
  /** view is the SessionView whose session these act on. */
  constructor(view) {
    this.view = view;
    // Items of the session's menu (SessionView); Delete says why it is off.
    this.renameBtn = h('button', { type: 'button', id: 'session-rename', text: 'Rename', onclick: () => this.startRename() });
    this.archiveBtn = h('button', { type: 'button', id: 'session-archive', onclick: () => this.setArchived(!this.info.archived) });
    this.deleteWhy = h('span', { class: 'menu-why small' });
    this.deleteBtn = h('button', { type: 'button', class: 'danger', id: 'session-delete', onclick: () => this.confirmDelete() },
      h('span', { text: 'Delete…' }), this.deleteWhy);
    this.items = [this.renameBtn, this.archiveBtn, this.deleteBtn];
    this.input = h('input', {
      id: 'rename-input', type: 'text', maxlength: String(MAX_TITLE * 2), autocomplete: 'off',
      'aria-label': 'Session title (empty: no title)', placeholder: 'Untitled session',
    });
    this.renameErr = h('p', { class: 'form-error small', role: 'alert' });
    this.form = h('form', { class: 'rename-form', hidden: true },
      this.input,
      h('button', { type: 'submit', class: 'btn primary', id: 'rename-save', text: 'Save' }),
      h('button', { type: 'button', class: 'btn', text: 'Cancel', onclick: () => this.stopRename() }),
      this.renameErr);
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.saveRename();
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.stopRename();
      }
    });
    // The note an archived session shows where the prompt box was.
    this.archivedNote = h('div', { class: 'archived-note', role: 'status', hidden: true },
      h('span', { text: 'This session is archived: you can read it, but it takes no prompt. ' }),
      h('button', { type: 'button', class: 'btn', id: 'archived-unarchive', text: 'Unarchive', onclick: () => this.setArchived(false) }));
  }

  get info() {
    return this.view.state.info;
  }

  get app() {
    return this.view.app;
  }

  draw() {
    const archived = !!this.info.archived;
    this.archiveBtn.textContent = archived ? 'Unarchive' : 'Archive';
    this.archivedNote.hidden = !archived;
    // Off during a turn, and saying so in the item itself (not a tooltip
    // a phone never shows); aria-disabled keeps it focusable and heard.
    const running = this.view.state.running;
    this.deleteBtn.setAttribute('aria-disabled', running ? 'true' : 'false');
    this.deleteWhy.textContent = running ? 'Stop the turn to delete' : '';
  }

  startRename() {
    this.input.value = this.info.title || '';
    this.renameErr.textContent = '';
    this.form.hidden = false;
    this.view.title.hidden = true;
    this.view.head.classList.add('renaming');
    this.input.focus();
    this.input.select();
  }

  stopRename() {
    this.form.hidden = true;
    this.view.title.hidden = false;
    this.view.head.classList.remove('renaming');
    this.view.menu.button.focus();
  }

  async saveRename() {
    const { title, problem } = cleanTitle(this.input.value);
    if (problem) {
      this.renameErr.textContent = problem;
      return;
    }
    try {
      const ans = await this.app.conn.request(message('ui.session.rename', { title }, this.info.id));
      this.app.applyChange(ans.payload);
      this.stopRename();
      this.app.announce(title ? `Renamed to ${title}.` : 'The title was removed.');
    } catch (err) {
      this.renameErr.textContent = `Not renamed: ${errorText(err)}`;
    }
  }

  async setArchived(archived, extra = null) {
    // An isolated session's unshipped work goes with its worktree: ask
    // first, naming it (docs/worktrees.md, "Cleaning up").
    const wt = this.info.worktree;
    if (archived && !extra && wt?.unshipped) {
      const ok = await confirmUnshipped(this.view.el, [this.info], 'Archive');
      if (!ok) return;
      extra = { discard: true, ...(ok.deleteBranch ? { delete_branch: true } : {}) };
    }
    try {
      const ans = await this.app.conn.request(message('ui.session.archive', { archived, ...(extra || {}) }, this.info.id), 60000);
      this.app.applyChange(ans.payload);
      this.app.announce(archived ? 'The session is archived.' : 'The session is back in the list.');
    } catch (err) {
      // The list was behind: the master knows of unshipped work.
      if (archived && !extra && err.code === 'unshipped_changes' && wt) {
        this.info.worktree = { ...wt, unshipped: true };
        this.setArchived(true);
        return;
      }
      this.app.toast(`Not ${archived ? 'archived' : 'unarchived'}: ${errorText(err)}`);
    }
  }

  confirmDelete() {
    if (this.view.state.running) return; // the item says why
    if (!this.dialog) {
      this.dialogErr = h('p', { class: 'form-error', role: 'alert' });
      this.dialogName = h('strong');
      this.dialog = h('dialog', { class: 'dialog', id: 'delete-dialog', 'aria-labelledby': 'delete-title' },
        h('div', { class: 'dialog-head' }, h('h2', { id: 'delete-title', text: 'Delete this session?' })),
        h('p', {}, this.dialogName, ' and its whole history go for good: the conversation, the files uploaded to it and the download links of the files the agent handed over. The files in the workspace stay.'),
        h('p', { class: 'muted small', text: 'To keep it out of the way without losing it, archive it instead.' }),
        this.wtNote = h('div', { class: 'wt-delete callout', hidden: true }),
        this.dialogErr,
        h('div', { class: 'q-actions' },
          h('button', { type: 'button', class: 'btn', id: 'delete-cancel', text: 'Cancel', onclick: () => this.dialog.close() }),
          h('button', { type: 'button', class: 'btn danger', id: 'delete-confirm', text: 'Delete', onclick: () => this.deleteNow() })));
      this.view.el.appendChild(this.dialog);
    }
    this.dialogName.textContent = this.info.title || 'This untitled session';
    this.dialogErr.textContent = '';
    this.drawWorktreeNote();
    this.dialog.showModal();
    this.dialog.querySelector('#delete-cancel').focus();
  }

  /**
   * drawWorktreeNote says, in the delete dialog of an isolated session,
   * that its worktree goes and what unshipped work goes with it, with
   * "Also delete the branch".
   */
  drawWorktreeNote() {
    const wt = this.info.worktree;
    this.wtNote.hidden = !wt;
    if (!wt) return;
    const box = h('input', { type: 'checkbox', id: 'delete-branch' });
    const said = h('p');
    const say = () => {
      const l = unshippedLoss(wt, box.checked);
      said.textContent = wt.unshipped
        ? `Its worktree holds unshipped work: ${l.what}. Lost: ${l.lost}.`
        : `Its worktree folder is removed; ${box.checked ? `the branch ${wt.branch} is deleted too` : `the branch ${wt.branch} stays`}.`;
    };
    box.addEventListener('change', say);
    say();
    this.wtNote.replaceChildren(said, h('div', { class: 'wt-check' }, box, h('label', { for: 'delete-branch', text: `Also delete the branch ${wt.branch}` })));
  }

  async deleteNow() {
    const wt = this.info.worktree;
    const payload = {};
    if (wt?.unshipped) payload.discard = true;
    if (wt && this.wtNote.querySelector('#delete-branch')?.checked) payload.delete_branch = true;
    try {
      const ans = await this.app.conn.request(message('ui.session.delete', payload, this.info.id), 60000);
      this.dialog.close();
      this.app.applyChange(ans.payload);
    } catch (err) {
      this.dialogErr.textContent = `Not deleted: ${errorText(err)}`;
    }
  }

  close() {
    this.dialog?.close();
  }
}
