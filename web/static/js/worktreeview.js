// Isolated sessions in the UI (docs/worktrees.md, docs/ui.md "Isolated
// sessions"): a row's branch line, the branch's Changes view
// (control.worktree.diff), the Ship sheet (control.worktree.propose, then
// control.worktree.ship; a conflict offers "Ask the agent to resolve":
// control.worktree.update, then a prompt naming the files), the confirmation
// before archiving or deleting unshipped work, and the compare view of a
// best of N. The words and payloads come from worktree.js (pure, unit
// checked); this module draws them and sends the messages.
//
// Every control is a labelled button, a phone's sheets are touch-sized, and
// every outcome is said in a live region as well as shown.

import { h, clear, formatCost, formatTokens, formatWhen } from './util.js';
import { message } from './conn.js';
import { renderDiff, onLayoutChange, diffLayout } from './diff.js';
import { CODES } from './codes.js';
import { confirmUnshipped } from './manage.js';
import {
  branchLine, parsePatch, fileNote, removedOf, STRATEGIES, shipPayload, shipProblem, shipOutcome, shipHelp,
  conflictPrompt, groupOf, usageOf,
} from './worktree.js';

/** refusal is a refused request as a person reads it: the message, and what to do. */
function refusal(err, wt) {
  const msg = err?.message || CODES[err?.code] || err?.code || 'refused';
  return { text: msg, help: shipHelp(err?.code, wt), code: err?.code || '' };
}

/**
 * branchInfo is a session row's (or header's) branch line: the branch,
 * +added −removed, ↑ahead ↓behind and badges, spoken as one sentence.
 */
export function branchInfo(wt, cls = '') {
  const b = branchLine(wt);
  if (!b) return null;
  return h('span', { class: `branch-line small ${cls}`, dataset: { branch: b.branch } },
    h('span', { class: 'sr-only', text: b.label }),
    h('span', { class: 'branch-name', 'aria-hidden': 'true', text: b.branch }),
    h('span', { class: 'diff-stat', 'aria-hidden': 'true' }, h('span', { class: 'plus', text: `+${wt.added || 0}` }), ' ', h('span', { class: 'minus', text: `−${removedOf(wt)}` })),
    h('span', { class: 'ahead-behind', 'aria-hidden': 'true', title: b.aheadBehindSaid, text: b.aheadBehind }),
    b.badges.map((x) => h('span', { class: `badge wt-badge ${x.kind}`, 'aria-hidden': 'true', text: x.text })));
}

/** sheetDialog is a dialog (a bottom sheet on a phone) with a head, a Close button and body. */
function sheetDialog(id, title, ...body) {
  const d = h('dialog', { class: 'dialog sheet wt-dialog', id, 'aria-labelledby': `${id}-title` });
  d.append(h('div', { class: 'dialog-head' }, h('h2', { id: `${id}-title`, text: title }),
    h('button', { type: 'button', class: 'btn', text: 'Close', onclick: () => d.close() })), ...body.filter(Boolean));
  d.addEventListener('click', (e) => {
    // A click on the backdrop (outside the box) closes it.
    const r = d.getBoundingClientRect();
    if (e.target === d && (e.clientX < r.left || e.clientX > r.right || e.clientY < r.top || e.clientY > r.bottom)) d.close();
  });
  return d;
}

/**
 * BranchChanges is an isolated session's Changes view: the branch's whole
 * diff against its base (committed, uncommitted and untracked), a list of
 * the files with +/−, then each file's patch, unified on a phone and side
 * by side on a wide screen (diff.js's toggle); a binary or cut file says so.
 */
export class BranchChanges {
  constructor(app, sessionId, getWt, container, extra = null) {
    this.app = app;
    this.id = sessionId;
    this.getWt = getWt;
    this.status = h('p', { class: 'muted small', role: 'status' });
    this.index = h('ul', { class: 'wt-files', 'aria-label': 'Changed files' });
    this.list = h('div', { class: 'changes-list' });
    this.dialog = sheetDialog('branch-changes', 'Changes on the branch', this.status, extra, this.index, this.list);
    this.dialog.classList.add('changes-dialog');
    container.appendChild(this.dialog);
    this.files = null;
    onLayoutChange(() => {
      if (this.dialog.open && this.files) this.draw();
    });
  }

  /** target points the view at session id. */
  target(id, getWt) {
    this.id = id;
    this.getWt = getWt;
  }

  async open() {
    const wt = this.getWt();
    this.dialog.querySelector('h2').textContent = `Changes on ${wt?.branch || 'the branch'}`;
    if (!this.dialog.open) this.dialog.showModal();
    this.status.textContent = 'Loading the diff…';
    clear(this.index);
    clear(this.list);
    try {
      const ans = await this.app.conn.request(message('control.worktree.diff', {}, this.id), 60000);
      this.answer = ans.payload || {};
      this.files = this.answer.files || [];
    } catch (err) {
      const r = refusal(err, wt);
      this.status.textContent = `Could not get the diff: ${r.text}${r.help ? ` ${r.help}` : ''}`;
      return;
    }
    this.draw();
  }

  draw() {
    const wt = { ...(this.getWt() || {}), ...(this.answer?.counts || {}) };
    const files = this.files;
    const b = branchLine(wt);
    this.status.textContent = files.length
      ? `${files.length} file${files.length === 1 ? '' : 's'} changed against ${wt.base || 'the base'}: ${b.sizeSaid}; ${b.aheadBehindSaid}.${this.answer?.truncated ? ' The diff is cut: some files are not shown in full.' : ''}`
      : `No change against ${wt.base || 'the base'} yet.`;
    clear(this.index);
    clear(this.list);
    // One file needs no index above it.
    this.index.hidden = files.length < 2;
    files.forEach((f, i) => {
      const anchor = `wt-file-${i}`;
      this.index.appendChild(h('li', {},
        h('a', { href: `#${anchor}`, class: 'wt-file-link', onclick: (e) => { e.preventDefault(); this.list.querySelector(`#${anchor}`)?.scrollIntoView({ block: 'start' }); } },
          h('span', { class: 'change-path', text: f.path }),
          h('span', { class: 'diff-stat small' }, h('span', { class: 'plus', text: `+${f.added || 0}` }), ' ', h('span', { class: 'minus', text: `−${removedOf(f)}` })),
          fileNote(f).length ? h('span', { class: 'muted small', text: fileNote(f)[0] }) : null)));
      const notes = fileNote(f);
      const sec = h('section', { class: 'change wt-file', id: anchor, dataset: { path: f.path, status: f.status || '' } });
      if (f.binary || !f.patch) {
        sec.append(h('div', { class: 'change-head' }, h('span', { class: 'change-path', text: f.path }),
          h('span', { class: 'diff-stat small' }, h('span', { class: 'plus', text: `+${f.added || 0}` }), ' ', h('span', { class: 'minus', text: `−${removedOf(f)}` }))));
        for (const n of notes) sec.append(h('p', { class: 'muted small wt-note', text: n }));
        if (!f.binary && !notes.length) sec.append(h('p', { class: 'muted small wt-note', text: 'No text change (a mode or type change).' }));
      } else {
        sec.append(renderDiff(parsePatch(f)));
        for (const n of notes.filter((x) => x !== 'new file')) sec.append(h('p', { class: 'muted small wt-note', text: n }));
      }
      this.list.appendChild(sec);
    });
    this.dialog.dataset.layout = diffLayout();
  }
}

/**
 * ShipSheet ships an isolated session: the proposed commit message
 * (editable), the merge strategy (squash by default), push and pull
 * request, then Ship. The result (merged, pushed, the pull request's or
 * the compare page's link) or the refusal with what to do shows in the
 * sheet; a conflict lists its files and offers to ask the agent.
 */
export class ShipSheet {
  /** opts: app, id (the session's), getWt, container, onResolve (after the agent was asked). */
  constructor({ app, id, getWt, container, onResolve }) {
    this.app = app;
    this.id = id;
    this.getWt = getWt;
    this.onResolve = onResolve;
    this.summary = h('p', { class: 'small wt-summary' });
    this.msg = h('textarea', { id: 'ship-message', rows: '4', maxlength: String(64 * 1024), spellcheck: 'true', 'aria-describedby': 'ship-message-status' });
    this.msgStatus = h('p', { class: 'muted small', id: 'ship-message-status', role: 'status' });
    this.radios = STRATEGIES.map((s) => {
      const input = h('input', { type: 'radio', name: 'ship-strategy', id: `ship-${s.value}`, value: s.value, checked: s.value === 'squash' });
      return h('div', { class: 'wt-radio' }, input, h('label', { for: `ship-${s.value}` }, h('span', { text: s.label }), h('span', { class: 'muted small', text: ` — ${s.hint}` })));
    });
    this.legend = h('legend', { text: 'Merge into the base' });
    this.push = h('input', { type: 'checkbox', id: 'ship-push' });
    this.pr = h('input', { type: 'checkbox', id: 'ship-pr' });
    this.remote = h('input', { type: 'text', id: 'ship-remote', placeholder: 'origin', autocomplete: 'off', spellcheck: 'false', maxlength: '200' });
    this.error = h('div', { class: 'form-error wt-error', role: 'alert' });
    this.conflict = h('div', { class: 'wt-conflict callout', hidden: true });
    this.result = h('div', { class: 'wt-result', role: 'status' });
    this.shipBtn = h('button', { type: 'submit', class: 'btn primary', id: 'ship-go', text: 'Ship' });
    // The choices give way to the result once shipped.
    this.fields = h('div', { class: 'stack ship-fields' },
      h('label', { for: 'ship-message', text: 'Commit message' }), this.msg, this.msgStatus,
      h('fieldset', { class: 'wt-strategies' }, this.legend, this.radios),
      h('div', { class: 'wt-check' }, this.push, h('label', { for: 'ship-push', text: 'Push the branch' })),
      h('div', { class: 'wt-remote stack' }, h('label', { for: 'ship-remote', text: 'Remote (empty: origin)' }), this.remote),
      h('div', { class: 'wt-check' }, this.pr, h('label', { for: 'ship-pr', text: 'Open a pull request (pushes the branch)' })));
    this.cancelBtn = h('button', { type: 'button', class: 'btn', text: 'Cancel', onclick: () => this.dialog.close() });
    this.form = h('form', { class: 'stack ship-form' },
      this.result, this.error, this.conflict, this.fields,
      h('div', { class: 'q-actions' }, this.cancelBtn, this.shipBtn));
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.ship();
    });
    this.pr.addEventListener('change', () => {
      if (this.pr.checked) this.push.checked = true;
    });
    this.dialog = sheetDialog('ship-sheet', 'Ship', this.summary, this.form);
    container.appendChild(this.dialog);
    // A refused ship may answer twice: the conflict's files
    // (session.worktree.conflict) and the error, in either order; the
    // first settles the request, the other comes here.
    this.app.conn.addEventListener('message', (e) => {
      const m = e.detail;
      if (!m.parent_id || m.parent_id !== this.asked) return;
      if (m.type === 'session.worktree.conflict') this.showConflict(m.payload || {});
      else if (m.type === 'error') this.showRefusal(m.payload || {});
    });
  }

  /** target points the sheet at session id (a message typed for another goes). */
  target(id, getWt) {
    if (id !== this.id) this.msg.value = '';
    this.id = id;
    this.getWt = getWt;
  }

  async open() {
    const wt = this.getWt() || {};
    this.dialog.querySelector('h2').textContent = `Ship ${wt.branch || 'the branch'}`;
    this.legend.textContent = `Merge into ${wt.base || 'the base'}`;
    const b = branchLine(wt);
    this.summary.textContent = b ? `${b.sizeSaid} in ${wt.files || 0} file${wt.files === 1 ? '' : 's'}; ${b.aheadBehindSaid}${wt.uncommitted ? '; uncommitted changes (committed first)' : ''}.` : '';
    clear(this.error);
    clear(this.result);
    this.conflict.hidden = true;
    this.fields.hidden = false;
    this.shipBtn.hidden = false;
    this.shipBtn.disabled = false;
    this.shipBtn.textContent = 'Ship';
    this.cancelBtn.textContent = 'Cancel';
    if (!this.dialog.open) this.dialog.showModal();
    this.msg.focus();
    if (this.msg.value.trim()) return;
    this.msgStatus.textContent = 'Asking for a commit message from the session’s prompts and answers…';
    try {
      const ans = await this.app.conn.request(message('control.worktree.propose', {}, this.id), 30000);
      if (!this.msg.value.trim()) this.msg.value = ans.payload?.message || '';
      this.msgStatus.textContent = 'Proposed from the session; edit it as you like.';
    } catch (err) {
      this.msgStatus.textContent = `No message proposed (${refusal(err, wt).text}): write one.`;
    }
  }

  choices() {
    return shipPayload({
      message: this.msg.value, strategy: this.form.querySelector('input[name="ship-strategy"]:checked')?.value,
      push: this.push.checked, pullRequest: this.pr.checked, remote: this.remote.value,
    });
  }

  async ship() {
    const wt = this.getWt() || {};
    const p = this.choices();
    clear(this.error);
    clear(this.result);
    this.conflict.hidden = true;
    const problem = shipProblem(p, wt);
    if (problem) {
      this.error.textContent = problem;
      return;
    }
    this.shipBtn.disabled = true;
    this.shipBtn.textContent = 'Shipping…';
    const msg = message('control.worktree.ship', p, this.id);
    this.asked = msg.message_id;
    try {
      const ans = await this.app.conn.request(msg, 120000);
      if (ans.type === 'session.worktree.conflict') {
        // The error follows (or came first and was shown).
        this.showConflict(ans.payload || {});
        if (!this.error.firstChild) this.showRefusal({ code: ans.payload?.code, message: CODES[ans.payload?.code] || 'refused' });
        return;
      }
      const out = shipOutcome(ans.payload?.result || {}, ans.payload?.worktree || wt);
      this.result.append(h('p', { class: 'wt-ok', text: 'Shipped.' }), ...out.lines.map((l) => h('p', { text: l })),
        ...out.links.map((l) => h('p', {}, h('a', { href: l.href, target: '_blank', rel: 'noopener noreferrer', class: 'wt-link', text: l.text }))));
      this.app.announce(`Shipped. ${out.lines.join(' ')}`);
      this.msg.value = '';
      this.fields.hidden = true;
      this.shipBtn.hidden = true;
      this.cancelBtn.textContent = 'Done';
      this.summary.textContent = '';
      this.cancelBtn.focus();
    } catch (err) {
      this.showRefusal(err);
    }
  }

  /** showRefusal says why the ship was refused and what to do (its latest word wins). */
  showRefusal(err) {
    const r = refusal(err, this.getWt() || {});
    clear(this.error).append(h('p', { dataset: { code: r.code }, text: `Not shipped: ${r.text}` }), r.help ? h('p', { class: 'small', text: r.help }) : null);
    this.error.scrollIntoView({ block: 'nearest' });
    this.shipBtn.disabled = false;
    this.shipBtn.textContent = 'Ship';
  }

  /** showConflict lists a conflict's files and offers to ask the agent to resolve it. */
  showConflict(c) {
    const wt = this.getWt() || {};
    const files = c.files || [];
    clear(this.conflict);
    const dirty = c.code === 'base_dirty';
    this.conflict.append(
      h('p', { text: dirty ? `Your checkout of ${c.base || wt.base} has uncommitted changes to:` : `These files conflict with ${c.base || wt.base}:` }),
      h('ul', { class: 'wt-conflict-files' }, files.map((f) => h('li', {}, h('code', { text: f })))),
      dirty ? null : h('button', { type: 'button', class: 'btn', id: 'ship-resolve', text: 'Ask the agent to resolve', onclick: () => this.resolve(files) }));
    this.conflict.hidden = false;
  }

  /**
   * resolve merges the base into the branch (control.worktree.update),
   * then asks the session's agent to resolve what conflicts, naming the
   * files the update left with markers.
   */
  async resolve(files) {
    const wt = this.getWt() || {};
    const btn = this.conflict.querySelector('#ship-resolve');
    if (btn) {
      btn.disabled = true;
      btn.textContent = 'Merging the base in…';
    }
    let left = files;
    try {
      const ans = await this.app.conn.request(message('control.worktree.update', {}, this.id), 120000);
      if (ans.type === 'session.worktree.conflict') left = ans.payload?.files || files;
      else left = [];
    } catch (err) {
      const r = refusal(err, wt);
      this.error.textContent = `The base was not merged in: ${r.text}`;
      if (btn) {
        btn.disabled = false;
        btn.textContent = 'Ask the agent to resolve';
      }
      return;
    }
    if (!left.length) {
      this.result.textContent = `${wt.base} merged into ${wt.branch} without conflicts: ship again.`;
      this.conflict.hidden = true;
      return;
    }
    const text = conflictPrompt(left, wt.base);
    const sent = this.app.sendControl(message('ui.prompt', { segments: [{ kind: 'text', text }] }, this.id),
      (err) => this.app.toast(`The agent was not asked: ${err.message}`));
    if (sent) {
      this.app.announce('The agent was asked to resolve the conflicts.');
      this.dialog.close();
      this.onResolve?.(text);
    }
  }
}

/**
 * archiveSessions archives infos (isolated sessions), after the unshipped
 * confirmation when one has unshipped work (discard:true then); it
 * resolves the number archived.
 */
export async function archiveSessions(app, container, infos) {
  const risky = infos.filter((s) => s.worktree?.unshipped);
  let extra = {};
  if (risky.length) {
    const ok = await confirmUnshipped(container, risky, 'Archive');
    if (!ok) return 0;
    extra = { discard: true, ...(ok.deleteBranch ? { delete_branch: true } : {}) };
  }
  let n = 0;
  for (const s of infos) {
    try {
      const ans = await app.conn.request(message('ui.session.archive', { archived: true, ...(s.worktree?.unshipped ? extra : {}) }, s.id), 60000);
      app.applyChange(ans.payload);
      n++;
    } catch (err) {
      app.toast(`“${s.title || 'Untitled session'}” was not archived: ${err.message}`);
    }
  }
  return n;
}

/**
 * showCompare draws the compare view of best-of-N group into main: per
 * session its agent and model, state, files changed, +/−, ahead/behind,
 * the test result with "Run tests", tokens and cost; "Ship this one"
 * opens the ship sheet, "Archive the others" archives the rest. A row of
 * cards a phone swipes through; side by side on a wide screen.
 */
export function showCompare(app, group, main) {
  // The dialogs live beside body, which every draw replaces.
  const body = h('div', { class: 'compare-body' });
  const wrap = h('section', { class: 'panel compare', 'aria-labelledby': 'compare-title', dataset: { group } }, body);
  clear(main).appendChild(wrap);
  const tests = new Map(); // session id → {passed, exit_code, output, running, error}
  const draw = () => {
    if (!wrap.isConnected) return;
    const list = groupOf([...app.sessions, ...app.archived], group);
    const live = list.filter((s) => !s.archived);
    // Subscribed to every copy: the master relays a stored answer (a
    // test run, a ship) to the session's subscribers, and a copy without
    // the master's usage totals (SessionInfo.usage) yet adds up its
    // agent.usage events.
    for (const s of list) app.watch(s);
    // A redraw keeps the focus on the control that had it.
    const had = body.contains(document.activeElement) ? document.activeElement.dataset.focus : '';
    clear(body);
    const title = list[0]?.title ? list[0].title.replace(/ \(\d of \d\)$/, '') : 'Best of N';
    body.append(h('h1', { id: 'compare-title', text: `Compare: ${title}` }),
      h('p', { class: 'muted small', text: list.length ? `${list.length} isolated sessions on one prompt${list.length > live.length ? `, ${list.length - live.length} archived` : ''}. Swipe or scroll through them; ship the one you like.` : 'No session of this group is listed (yet).' }));
    const cards = h('ol', { class: 'compare-list', 'aria-label': 'Sessions compared' });
    list.forEach((s, i) => {
      const wt = s.worktree || {};
      const b = branchLine(wt);
      const usage = usageOf(s, app.states.get(s.id)?.totals());
      const t = tests.get(s.id);
      const m = app.machines.find((x) => x.id === s.machine_id);
      const agentName = m?.adapters?.find((a) => a.id === s.adapter)?.name || s.adapter;
      // The model in force: the copy's own events first (a pick from the form), else the list's.
      const model = app.states.get(s.id)?.settings?.model || s.settings?.model || '';
      const testText = t?.running ? 'running…'
        : t?.error ? `not run: ${t.error}`
          : t && !t.ran ? 'no test command (.ferry/test)'
            : t ? `${t.passed ? 'passed' : 'failed'}${typeof t.exit_code === 'number' ? ` (exit ${t.exit_code})` : ''}`
              : wt.test === 'passed' ? 'passed' : wt.test === 'failed' ? 'failed' : 'not run';
      const row = (k, v, cls = '') => [h('dt', { text: k }), h('dd', { class: cls }, v)];
      const others = live.filter((x) => x.id !== s.id);
      const card = h('li', { class: 'compare-card', dataset: { session: s.id }, 'aria-labelledby': `cmp-${i}` },
        h('h2', { id: `cmp-${i}`, class: 'compare-name' }, h('a', { href: `#/s/${encodeURIComponent(s.id)}`, text: `${i + 1}. ${agentName}${model ? ` · ${model}` : ''}` })),
        h('p', { class: 'muted small', text: `${s.state === 'running' ? 'running' : s.waiting ? 'waiting for you' : 'idle'}${s.archived ? ' · archived' : ''} · ${formatWhen(s.updated_at)}` }),
        h('dl', { class: 'compare-facts' },
          row('Branch', h('code', { text: b?.branch || '—' })),
          row('Files', String(wt.files || 0)),
          row('Lines', h('span', { class: 'diff-stat' }, h('span', { class: 'plus', text: `+${wt.added || 0}` }), ' ', h('span', { class: 'minus', text: `−${removedOf(wt)}` }))),
          row('Commits', h('span', { title: b?.aheadBehindSaid || '', text: b ? `${b.aheadBehind}${wt.uncommitted ? ' + uncommitted' : ''}` : '—' })),
          row('Tests', testText, `test ${t?.passed === false || (!t && wt.test === 'failed') ? 'bad' : ''}`),
          row('Tokens', usage ? `${formatTokens(usage.tokens)}${usage.cost !== null ? ` · ${formatCost(usage.cost)}` : ''}` : 'open the session to count')),
        // The facts say the tests; the badges say what else is wrong or done.
        b?.badges.some((x) => !x.text.startsWith('tests')) ? h('p', {}, b.badges.filter((x) => !x.text.startsWith('tests')).map((x) => h('span', { class: `badge wt-badge ${x.kind}`, text: x.text }))) : null,
        t?.output ? h('details', { class: 'wt-output' }, h('summary', { text: 'Test output' }), h('pre', { text: t.output })) : null,
        h('div', { class: 'compare-actions' },
          h('button', { type: 'button', class: 'btn', text: 'Run tests', dataset: { focus: `${s.id}:test` }, 'aria-label': `Run tests: session ${i + 1}`, disabled: !!t?.running || !!s.archived, onclick: () => runTests(s) }),
          h('button', { type: 'button', class: 'btn', text: 'Changes', dataset: { focus: `${s.id}:changes` }, 'aria-label': `Changes: session ${i + 1}`, onclick: () => changes(s) }),
          h('button', { type: 'button', class: 'btn primary', text: 'Ship this one', dataset: { focus: `${s.id}:ship` }, 'aria-label': `Ship this one: session ${i + 1}`, disabled: !!s.archived, onclick: () => ship(s) }),
          others.length && !s.archived ? h('button', { type: 'button', class: 'btn', text: 'Archive the others', dataset: { focus: `${s.id}:archive` }, 'aria-label': `Archive the others: keep session ${i + 1}`, onclick: () => archiveOthers(others) }) : null));
      cards.appendChild(card);
    });
    body.appendChild(cards);
    if (had) body.querySelector(`[data-focus="${CSS.escape(had)}"]`)?.focus();
  };
  const runTests = async (s) => {
    tests.set(s.id, { running: true });
    draw();
    try {
      const ans = await app.conn.request(message('control.worktree.test', {}, s.id), 15 * 60000);
      tests.set(s.id, ans.payload || {});
      app.announce(`Tests of “${s.title || 'the session'}”: ${ans.payload?.ran === false ? 'no test command' : ans.payload?.passed ? 'passed' : 'failed'}.`);
    } catch (err) {
      tests.set(s.id, { error: err.message || err.code });
    }
    draw();
  };
  // One Changes view and one Ship sheet, pointed at the session asked.
  let changesView = null;
  let shipSheet = null;
  const changes = (s) => {
    changesView ||= new BranchChanges(app, s.id, null, wrap);
    changesView.target(s.id, () => app.findInfo(s.id)?.worktree);
    changesView.open();
  };
  const ship = (s) => {
    shipSheet ||= new ShipSheet({ app, id: s.id, getWt: null, container: wrap, onResolve: () => { location.hash = `#/s/${encodeURIComponent(shipSheet.id)}`; } });
    shipSheet.target(s.id, () => app.findInfo(s.id)?.worktree);
    shipSheet.open();
  };
  const archiveOthers = async (others) => {
    const n = await archiveSessions(app, wrap, others);
    if (n) app.announce(`${n} session${n === 1 ? '' : 's'} archived.`);
    draw();
  };
  draw();
  return draw;
}
