// One open session: its one-row header (back, title, state, the mode
// chip and a menu of every action), its settings sheet, the conversation
// and the prompt box. It subscribes to the session's
// events on mount and again after every reconnect, from the last seq it
// holds, and unsubscribes on unmount (its state is kept: coming back
// resumes from there).

import { h, clear, formatBytes, formatCost, formatTokens, frameThrottle, instructionPath, settingRow, shorten, uuid } from './util.js';
import { message } from './conn.js';
import { TranscriptView, artifactCard } from './transcript.js';
import { Composer, COMMANDS } from './composer.js';
import { PromptSettings } from './settings.js';
import { onLayoutChange } from './diff.js';
import { TURN_LABELS, editSegments } from './session.js';
import { TimeoutSetting } from './timeoutsetting.js';
import { ModelSetting } from './modelsetting.js';
import { HistoryUI } from './history.js';
import { SessionActions } from './manage.js';
import { Menu } from './menu.js';
import { icon } from './attach.js';
import { BranchChanges, ShipSheet, branchInfo } from './worktreeview.js';
import { TodoPanel } from './todos.js';

const STATUS_TEXT = {
  idle: 'Ready',
  ...TURN_LABELS,
  lost: 'Reconnecting…', // short: the banner above says what is kept
  resuming: 'Resuming…',
  offline: 'Machine offline',
};

export class SessionView {
  constructor(app, state) {
    this.app = app;
    this.state = state;
    this.links = new Map(); // artifact_id → {url, expires}
    this.linksTimer = 0;
    this.subscribing = false;
    this.lastVersion = -1;
    this.stopping = false;
    this.render = frameThrottle(() => this.draw());
  }

  get conn() {
    return this.app.conn;
  }

  machine() {
    return this.app.machines.find((m) => m.id === this.state.info.machine_id);
  }

  /**
   * adapter is the session's capability: what its agent really offers
   * (agent.capabilities), else its adapter's declaration on the machine.
   */
  adapter() {
    return this.state.capabilities || this.machine()?.adapters?.find((a) => a.id === this.state.info.adapter);
  }

  caps() {
    const m = this.machine();
    const a = this.adapter();
    return {
      search: !!m?.file_search,
      slash: !!a?.input_types?.includes('slash_command'),
      compact: !!a?.compact,
      cancel: a ? !!a.cancel : true,
      modes: a?.modes?.length ? a.modes : ['default'],
      // The kinds of files the agent takes; none without context_files.
      attach: a?.settings?.includes('context_files') ? (a.attachments?.length ? a.attachments : ['text', 'image', 'pdf']) : [],
    };
  }

  mount(main) {
    const s = this.state;
    this.history = new HistoryUI(this);
    this.transcript = new TranscriptView(s, {
      respond: (it, v, t, n) => this.respond(it, v, t, n),
      denyNote: () => !!this.adapter()?.deny_note,
      artifactLink: (id) => this.links.get(id),
      download: (e, a) => this.download(e, a),
      toolControls: (tool) => this.history.toolControls(tool),
      turnControls: (t) => this.history.turnControls(t),
      editAgain: (p) => this.editAgain(p),
      machineName: () => this.machine()?.name || '',
      plainText: () => this.adapter()?.text_format === 'plain',
      // Tool rows show paths relative to the session's workspace.
      workspacePath: () => this.machine()?.workspaces?.find((w) => w.id === s.info.workspace_id)?.path || '',
    });
    this.composer = new Composer({
      caps: () => this.caps(),
      running: () => s.running,
      search: (q, onError) => this.search(q, onError),
      cancelSearch: (id) => this.app.control('control.file.search.cancel', { query_id: id }, s.id, () => {}),
      submit: (segs, files, restore) => this.submit(segs, files, restore),
      promptStored: (id) => !!s.prompts.get(id)?.stored,
      sessionId: () => s.id,
      command: (name, arg) => this.command(name, arg),
      commands: () => s.commands,
      agentCommand: (text) => this.agentCommand(text),
      cancelTurn: () => this.cancelTurn(),
      openSettings: () => this.openSettings(),
    });
    this.settings = new PromptSettings();
    this.title = h('h1', { class: 'session-title', tabindex: '-1' });
    this.meta = h('p', { class: 'session-meta muted small' });
    this.pill = h('span', { class: 'status-pill', role: 'status' });
    this.modeSelect = h('select', { id: 'mode-select', onchange: () => this.switchMode(this.modeSelect.value) });
    this.timeoutSetting = new TimeoutSetting(this);
    this.modelSetting = new ModelSetting(this);
    // One header row: back (phones; a desktop has its sidebar), the title
    // with a meta line (the mode chip, where, usage), the state in words,
    // and one menu holding every action on the session.
    this.modeChip = h('button', { type: 'button', class: 'mode-chip', 'aria-haspopup': 'dialog', onclick: () => this.openSettings() });
    const item = (text, onclick, attrs = {}) => h('button', { type: 'button', text, onclick, ...attrs });
    this.settingsItem = item('Settings…', () => this.openSettings(), { 'aria-haspopup': 'dialog' });
    this.compactBtn = item('Compact…', () => this.openCompact(), { 'aria-haspopup': 'dialog' });
    this.filesBtn = item('Files', () => this.openFiles(), { 'aria-haspopup': 'dialog' });
    this.changesBtn = item('Changes', () => this.history.open(), { 'aria-haspopup': 'dialog' });
    // An isolated session's branch (worktreeview.js): its diff against the
    // base, Ship, and the compare view of its best of N.
    this.branchBtn = item('Changes', () => this.openBranch(), { 'aria-haspopup': 'dialog', id: 'session-branch-changes' });
    this.shipBtn = item('Ship…', () => this.openShip(), { 'aria-haspopup': 'dialog', id: 'session-ship' });
    this.compareBtn = h('a', { id: 'session-compare', href: '#/' });
    this.branchRow = h('div', { class: 'head-branch' });
    this.usage = h('span', { class: 'usage-total' });
    this.metaUsage = h('span', { class: 'meta-usage' });
    this.actions = new SessionActions(this);
    this.menu = new Menu({
      id: 'session-menu', label: 'This session',
      button: { attrs: { id: 'session-menu-btn', class: 'btn icon menu-btn', 'aria-label': 'Session menu' }, children: [icon('more')] },
    });
    const [rename, archive, del] = this.actions.items;
    this.menu.add(this.settingsItem, rename, this.filesBtn, this.branchBtn, this.shipBtn, this.compareBtn, this.changesBtn, this.compactBtn, archive, del);
    this.back = h('a', { class: 'btn icon session-back', href: '#/', 'aria-label': 'Back to the sessions' }, icon('back'));
    this.head = h('header', { class: 'session-head' },
      this.back,
      h('div', { class: 'head-titles' }, this.title, this.actions.form, h('div', { class: 'head-sub' }, this.modeChip, this.meta), this.branchRow),
      this.pill,
      this.menu.el);
    this.buildSettings();
    this.offline = h('div', { class: 'offline-note', role: 'status', hidden: true });
    // The agent's todo list, pinned above the prompt box (todos.js).
    this.todoPanel = new TodoPanel();
    this.el = h('section', { class: 'session', 'aria-labelledby': 'session-title' }, this.head, this.offline, this.transcript.el,
      this.actions.archivedNote, this.todoPanel.el, this.composer.form, this.settingsDialog);
    this.title.id = 'session-title';
    clear(main).appendChild(this.el);
    this.onLayout = () => {
      this.transcript.update(true);
    };
    onLayoutChange(this.onLayout);
    this.transcript.update(true);
    this.transcript.scrollToEnd();
    this.draw();
    if (this.conn.state === 'open') this.subscribe();
    if (!matchMedia('(pointer: coarse)').matches) this.composer.focus();
  }

  unmount() {
    this.unmounted = true;
    clearTimeout(this.linksTimer);
    this.composer?.destroy();
    this.closeDialogs();
    if (this.conn.state === 'open') this.conn.send(message('ui.session.unsubscribe', {}, this.state.id));
  }

  /** subscribe asks for the session's events after the last seq held. */
  async subscribe() {
    if (this.unmounted) return;
    this.subscribing = true;
    this.render();
    try {
      await this.conn.request(message('ui.session.subscribe', this.state.subscribePayload(), this.state.id));
    } catch (e) {
      this.subscribing = false;
      if (e.code === 'not_found') this.app.toast('This session no longer exists, or this login may not see it.');
      else if (e.code !== 'connection_lost') this.app.toast(`Could not open the session: ${e.message}`);
      this.render();
    }
  }

  /** onConnState follows the connection: resubscribe once it is back. */
  onConnState(st) {
    if (st === 'open') this.subscribe();
    this.render();
  }

  /** onMessage takes a message of this session. */
  onMessage(msg) {
    const s = this.state;
    if (msg.type === 'master.subscribed') {
      const { reset } = s.onSubscribed(msg.payload);
      this.subscribing = false;
      if (reset) this.transcript.reset();
      this.transcript.update(true);
      this.scheduleLinks(0);
      this.render();
      return;
    }
    if (msg.type === 'session.file.candidates') {
      this.composer.onCandidates(msg.payload);
      return;
    }
    const r = s.accept(msg);
    if (r === 'resync') {
      // The history cannot go on from here: subscribe again from the last
      // seq held (once; the replay brings what is dropped meanwhile).
      if (!this.subscribing) this.subscribe();
      return;
    }
    if (r !== 'ok') return;
    if (msg.type === 'control.prompt.request') this.composer.accepted(msg.message_id); // the draft goes (draft.js)
    const live = typeof msg.seq !== 'number' || msg.seq > s.liveFrom;
    const p = msg.payload || {};
    switch (msg.type) {
      case 'agent.turn.started':
        this.stopping = false;
        if (live) this.app.announce('The agent is working.');
        break;
      case 'agent.text.done': {
        this.stopping = false;
        if (!live) break;
        const t = s.turns.get(p.turn_id);
        if (t?.state === 'cancelled') this.app.announce('The turn was cancelled.');
        else if (t?.state === 'error') this.app.announce('The turn failed.');
        else this.app.announce(`The agent finished: ${shorten(t?.text || p.text || '', 300)}`);
        break;
      }
      case 'agent.interaction.request':
        if (live) this.app.announce(`The agent asks: ${p.title}. The question is above the prompt box.`);
        break;
      case 'agent.artifact':
        this.scheduleLinks(300);
        break;
      case 'agent.mode.changed':
        this.app.announce(`Mode is now ${p.mode}.`);
        break;
      default:
        break;
    }
    this.app.sessionChanged(s);
    this.render();
  }

  draw() {
    if (this.unmounted) return;
    const s = this.state;
    this.transcript.update();
    const caps = this.caps();
    const m = this.machine();
    const ws = m?.workspaces?.find((w) => w.id === s.info.workspace_id);
    this.title.textContent = s.info.title || 'Untitled session';
    clear(this.meta).append([m?.name || s.info.machine_id, ws?.name || s.info.workspace_id, this.adapter()?.name || s.info.adapter].join(' · '), this.metaUsage);
    let st = s.status();
    if (this.conn.state === 'lost' || this.conn.state === 'connecting') st = 'lost';
    else if (this.subscribing) st = 'resuming';
    this.pill.dataset.state = st;
    clear(this.pill).append(st === 'running' || st === 'lost' || st === 'resuming' ? h('span', { class: 'spinner', 'aria-hidden': 'true' }) : '', STATUS_TEXT[st] || st);
    const offline = m && !m.online;
    this.offline.hidden = !offline;
    this.offline.textContent = offline ? 'This machine is offline: prompts and answers wait for it to reconnect (a few seconds at most, then they fail).' : '';
    // Mode.
    const modes = caps.modes;
    if (this.modeSelect.dataset.modes !== modes.join(',')) {
      clear(this.modeSelect);
      for (const md of modes) this.modeSelect.appendChild(h('option', { value: md, text: md }));
      this.modeSelect.dataset.modes = modes.join(',');
    }
    if (this.modePending && s.mode === this.modeSelect.value) this.modePending = false;
    if (!this.modePending) this.modeSelect.value = s.mode;
    this.modeSelect.disabled = modes.length < 2;
    this.modeChip.textContent = this.modeSelect.value || s.mode || 'default';
    this.modeChip.setAttribute('aria-label', `Mode: ${this.modeChip.textContent}. Session settings`);
    this.modeChip.dataset.mode = this.modeChip.textContent;
    this.timeoutSetting.draw();
    this.modelSetting.draw();
    this.compactBtn.hidden = !caps.compact;
    this.composer.setAttach(caps.attach);
    this.settings.update(this.adapter()?.settings);
    this.changesBtn.hidden = !this.history.available();
    this.drawBranch();
    const n = s.artifacts.size;
    this.filesBtn.textContent = n ? `Files (${n})` : 'Files';
    const tot = s.totals();
    this.usage.textContent = tot.turns ? `${formatTokens(tot.input + tot.output)} tokens${tot.hasCost ? ` · ${formatCost(tot.cost)}` : ''}` : '';
    this.metaUsage.textContent = this.usage.textContent ? ` · ${this.usage.textContent}` : '';
    this.usageRow.hidden = !tot.turns;
    this.usage.title = tot.turns ? `${tot.input.toLocaleString()} in, ${tot.output.toLocaleString()} out, ${tot.cacheRead.toLocaleString()} cached` : '';
    this.composer.setRunning(s.running, caps.cancel);
    this.todoPanel.update(s.todos);
    // An archived session is read-only: the master refuses its prompts.
    this.composer.form.hidden = !!s.info.archived;
    this.actions.draw();
    this.composer.stopBtn.textContent = this.stopping ? 'Stopping…' : 'Stop';
    if (this.filesDialog?.open) this.fillFiles();
    this.drawInstructions();
  }

  /**
   * drawInstructions lists the instruction files in the agent's system
   * prompt (agent.instructions) in the settings sheet: a file in the
   * workspace or a folder above it by its short path ("AGENTS.md",
   * "../CLAUDE.md"), others in full, with its size and whether it was cut.
   */
  drawInstructions() {
    const files = this.state.instructions || [];
    const root = this.machine()?.workspaces?.find((w) => w.id === this.state.info.workspace_id)?.path || '';
    const key = JSON.stringify([files, root]);
    if (this.instructionsRow.dataset.key === key) return;
    this.instructionsRow.dataset.key = key;
    this.instructionsRow.hidden = !files.length;
    clear(this.instructionsRow).append(
      h('h3', { id: 'instructions-title', class: 'setting-title', text: 'Instructions' }),
      h('p', { class: 'muted small', text: "In the agent's system prompt, outermost first; edits count from the next turn." }),
      h('ul', { class: 'instruction-files' }, ...files.map((f) => h('li', { title: f.path },
        h('code', { text: instructionPath(f.path, root) }),
        h('span', { class: 'muted small', text: ` · ${formatBytes(f.bytes)}${f.truncated ? ' · cut to fit' : ''}` })))));
  }

  search(query, onError) {
    const id = uuid();
    const msg = message('control.file.search', { query_id: id, query, max_results: 20 }, this.state.id);
    this.app.sendControl(msg, (err) => queueMicrotask(() => onError(id, err)));
    return id;
  }

  /**
   * submit sends a prompt: its segments and the uploaded files
   * (context_files). A refusal puts the text back in the box, and
   * restore(err) the files, so the user can fix it and send again.
   */
  submit(segs, files = [], restore = null) {
    if (this.conn.state !== 'open') {
      this.app.toast('Not connected to the master: the prompt was not sent. It is still in the box.');
      return false;
    }
    const s = this.state;
    if (s.running) {
      this.app.toast('The agent is still working: wait for it, or stop it first.');
      return false;
    }
    const o = this.settings.overrides();
    if (o.error) {
      this.app.toast(`${o.error} The prompt was not sent.`);
      this.settings.el.open = true;
      this.openSettings();
      return false;
    }
    const wire = segs.map((x) => (x.kind === 'text' ? { kind: 'text', text: x.text } : { kind: 'file', file: x.file }));
    const payload = { segments: wire };
    if (files.length) payload.context_files = files;
    if (o.value) payload.config_overrides = o.value;
    const msg = message('ui.prompt', payload, s.id);
    s.addPending(msg.message_id, segs.map((x) => (x.kind === 'text' ? { text: x.text } : { file: x.file, display: x.file.display_path || x.file.path })), 'text', files);
    this.app.sendControl(msg, (err) => {
      s.promptFailed(msg.message_id, err);
      if (this.composer.isEmpty()) this.composer.setSegments(segs);
      // The prompt box says why next to the files; a toast would repeat it.
      if (restore) restore(err);
      else this.app.toast(`The prompt was not delivered: ${err.message}`);
      this.render();
    });
    this.transcript.update();
    this.transcript.scrollToEnd();
    this.render();
    return msg.message_id;
  }

  /**
   * editAgain puts a prompt that did not run back in the prompt box (its
   * text and picked files; uploads are attached again by hand), unless the
   * box holds something the user typed.
   */
  editAgain(p) {
    if (!this.composer.isEmpty()) {
      this.app.toast('The prompt box is not empty: send or clear what it holds first.');
      return;
    }
    this.composer.setSegments(editSegments(p.parts));
    this.composer.focus();
  }

  /** agentCommand sends one of the agent's own slash commands (agent.commands). */
  agentCommand(text) {
    if (this.state.running) {
      this.app.toast('Wait for the running turn to end first.');
      return false;
    }
    this.sendSlash(text);
    return true;
  }

  /** sendSlash sends a slash command to an agent that takes them. */
  sendSlash(text) {
    const msg = message('ui.prompt', { segments: [{ kind: 'text', text }], input_type: 'slash_command' }, this.state.id);
    this.state.addPending(msg.message_id, [{ text }], 'slash_command');
    this.app.sendControl(msg, (err) => {
      this.state.promptFailed(msg.message_id, err);
      this.render();
    });
    this.render();
  }

  command(name, arg) {
    const s = this.state;
    const caps = this.caps();
    const note = (level, text) => {
      s.addNote(level, text);
      this.render();
    };
    switch (name) {
      case 'help':
        note('info', `Commands: ${COMMANDS.map((c) => `/${c.name}${c.args ? ` ${c.args}` : ''}`).join(', ')}${s.commands.length && caps.slash ? `; the agent's own: ${s.commands.map((c) => `/${c.name}`).join(', ')}` : ''}. Keys: Enter sends, Shift+Enter is a new line, @ picks a file (↑↓ move, Enter or Tab picks, Esc closes), Esc stops a running turn.`);
        return true;
      case 'mode':
        if (!caps.modes.includes(arg)) {
          note('error', `Say /mode ${caps.modes.join('|')}.`);
          return false;
        }
        this.switchMode(arg);
        return true;
      case 'compact':
        if (!caps.compact) {
          note('error', 'This agent cannot compact its history.');
          return false;
        }
        this.compact(arg);
        return true;
      case 'cancel':
        this.cancelTurn();
        return true;
      case 'cost': {
        if (caps.slash && !s.running) {
          this.sendSlash('/cost');
          return true;
        }
        const t = s.totals();
        note('info', t.turns
          ? `This session: ${t.input.toLocaleString()} input and ${t.output.toLocaleString()} output tokens${t.cacheRead ? `, ${t.cacheRead.toLocaleString()} from the cache` : ''}${t.hasCost ? `, ${formatCost(t.cost)}` : ''}, over ${t.turns} turn${t.turns === 1 ? '' : 's'}.`
          : 'No usage reported yet.');
        return true;
      }
      case 'clear':
        if (!caps.slash) {
          note('error', 'This agent takes no slash commands: it cannot clear its history from here.');
          return false;
        }
        if (s.running) {
          this.app.toast('Wait for the running turn to end first.');
          return false;
        }
        this.sendSlash('/clear');
        return true;
      default:
        return false;
    }
  }

  switchMode(mode) {
    const s = this.state;
    if (mode === s.mode) return;
    this.modePending = true;
    this.modeSelect.value = mode;
    const sent = this.app.control('control.mode.switch', { mode }, s.id, (err) => {
      this.modePending = false;
      this.app.toast(`The mode was not switched: ${err.message}`);
      this.render();
    });
    if (!sent) {
      this.modePending = false;
      this.render();
      return;
    }
    this.app.announce(`Switching to ${mode} mode…`);
    // agent.mode.changed confirms it; the select shows the wish meanwhile.
    clearTimeout(this.modeTimer);
    this.modeTimer = setTimeout(() => {
      this.modePending = false;
      this.render();
    }, 8000);
  }

  compact(instruction, ratio) {
    const payload = instruction ? { instruction } : {};
    if (ratio !== undefined) payload.target_token_ratio = ratio;
    if (this.app.control('control.session.compact', payload, this.state.id, (err) => this.app.toast(`Compaction failed: ${err.message}`))) {
      this.state.addNote('info', instruction ? `Compaction requested: “${shorten(instruction, 120)}”.` : 'Compaction requested.');
      this.render();
    }
  }

  cancelTurn() {
    const s = this.state;
    if (!s.running || !s.current) return;
    this.stopping = true;
    this.app.control('control.prompt.cancel', { target_turn_id: s.current, reason: 'user_cancelled' }, s.id, (err) => {
      this.stopping = false;
      this.app.toast(`Could not stop the turn: ${err.message}`);
      this.render();
    });
    this.app.announce('Stopping the turn…');
    this.render();
  }

  respond(it, value, text, note) {
    const payload = { interaction_id: it.id, selected_value: value };
    if (text !== undefined) payload.text_input = text;
    if (note && note.trim()) payload.note = note.trim();
    it.sending = true;
    it.error = '';
    const sent = this.app.control('control.interaction.response', payload, this.state.id, (err) => {
      it.sending = false;
      it.error = err.code === 'interaction_settled' ? 'Another answer came first.' : `Not delivered: ${err.message}`;
      this.touchInteraction(it);
    });
    if (!sent) {
      it.sending = false;
      it.error = 'Not connected to the master: try again once the connection is back.';
    }
    this.touchInteraction(it);
  }

  touchInteraction(it) {
    const t = this.state.turns.get(it.req.turn_id);
    if (t) this.state.bumpBlock(t, 'interaction', it.id);
    this.render();
  }

  // Artifacts.

  scheduleLinks(ms) {
    clearTimeout(this.linksTimer);
    this.linksTimer = setTimeout(() => this.refreshLinks(), ms);
  }

  async refreshLinks(one = '') {
    if (this.conn.state !== 'open' || this.unmounted) return;
    if (!one && !this.state.artifacts.size) return;
    let ans;
    try {
      ans = await this.conn.request(message('ui.artifacts.list', one ? { artifact_id: one } : {}, this.state.id));
    } catch {
      return;
    }
    for (const l of ans.payload.artifacts || []) {
      this.links.set(l.artifact.artifact_id, { url: l.download_url, expires: Date.parse(l.expires_at) });
      this.state.addArtifact(l.artifact);
    }
    for (const a of this.el.ownerDocument.querySelectorAll('a[data-artifact]')) {
      const l = this.links.get(a.dataset.artifact);
      if (l) a.href = l.url;
    }
    this.render();
  }

  /** download follows an artifact's link, fetching a fresh one when it expired. */
  async download(e, a) {
    const l = this.links.get(a.artifact_id);
    if (l && l.expires - 60000 > Date.now()) return; // the link downloads
    e.preventDefault();
    await this.refreshLinks(a.artifact_id);
    const fresh = this.links.get(a.artifact_id);
    if (!fresh) {
      this.app.toast('This file cannot be downloaded right now.');
      return;
    }
    const tmp = h('a', { href: fresh.url, download: a.file_name, hidden: true });
    document.body.appendChild(tmp);
    tmp.click();
    tmp.remove();
  }

  openFiles() {
    if (!this.filesDialog) {
      this.filesList = h('div', { class: 'files-list' });
      this.filesDialog = h('dialog', { class: 'dialog', 'aria-labelledby': 'files-title' },
        h('div', { class: 'dialog-head' }, h('h2', { id: 'files-title', text: 'Files the agent handed over' }),
          h('button', { type: 'button', class: 'btn', text: 'Close', onclick: () => this.filesDialog.close() })),
        this.filesList);
      this.el.appendChild(this.filesDialog);
    }
    this.fillFiles();
    this.filesDialog.showModal();
    this.refreshLinks();
  }

  fillFiles() {
    clear(this.filesList);
    const arts = [...this.state.artifacts.values()];
    if (!arts.length) {
      this.filesList.appendChild(h('p', { class: 'muted', text: 'No files yet. When the agent writes a file for you, it shows up here.' }));
      return;
    }
    const ctx = { artifactLink: (id) => this.links.get(id), download: (e, a) => this.download(e, a) };
    for (const a of arts.slice().reverse()) this.filesList.appendChild(artifactCard(a, ctx));
  }

  openCompact() {
    if (!this.compactDialog) {
      const ta = h('textarea', { id: 'compact-instruction', rows: '3', placeholder: 'e.g. keep the failing test names' });
      // Offered only to agents that can aim at a size (settings).
      this.compactRatio = h('input', { id: 'compact-ratio', type: 'number', min: '1', max: '100', step: '1', inputmode: 'numeric', placeholder: 'agent default' });
      this.compactRatioRow = h('div', { class: 'stack' },
        h('label', { for: 'compact-ratio', text: 'Target size, % of now (optional)' }), this.compactRatio);
      const form = h('form', { method: 'dialog', class: 'stack' },
        h('label', { for: 'compact-instruction', text: 'What must the summary keep? (optional)' }), ta, this.compactRatioRow,
        h('div', { class: 'q-actions' },
          h('button', { type: 'button', class: 'btn', text: 'Cancel', onclick: () => this.compactDialog.close() }),
          h('button', { type: 'submit', class: 'btn primary', text: 'Compact' })));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        const pct = this.compactRatioRow.hidden ? '' : this.compactRatio.value.trim();
        if (pct && !(Number(pct) >= 1 && Number(pct) <= 100)) {
          this.app.toast('The target size is a percentage from 1 to 100.');
          return;
        }
        this.compact(ta.value.trim(), pct ? Number(pct) / 100 : undefined);
        ta.value = '';
        this.compactRatio.value = '';
        this.compactDialog.close();
      });
      this.compactDialog = h('dialog', { class: 'dialog', 'aria-labelledby': 'compact-title' },
        h('div', { class: 'dialog-head' }, h('h2', { id: 'compact-title', text: "Compact the agent's history" })),
        h('p', { class: 'muted small', text: 'The agent summarises the older conversation so it fits its context; the latest turns stay as they are.' }),
        form);
      this.el.appendChild(this.compactDialog);
    }
    this.compactRatioRow.hidden = !this.adapter()?.settings?.includes('target_token_ratio');
    this.compactDialog.showModal();
  }

  /**
   * buildSettings makes the settings sheet: the session's settings (mode,
   * model, thinking, ask timeout) with visible labels, its usage, and the
   * settings of the next prompts (settings.js).
   */
  buildSettings() {
    this.usageRow = h('p', { class: 'setting-usage small' }, h('span', { class: 'muted', text: 'Used so far: ' }), this.usage);
    this.settingsDialog = h('dialog', { class: 'dialog sheet', id: 'settings-dialog', 'aria-labelledby': 'settings-title' },
      h('div', { class: 'dialog-head' }, h('h2', { id: 'settings-title', text: 'Session settings' }),
        h('button', { type: 'button', class: 'btn', text: 'Close', onclick: () => this.settingsDialog.close() })),
      h('div', { class: 'settings-sheet' },
        settingRow('Mode', 'mode-select', this.modeSelect, 'What the agent may do: plan and review do not write.'),
        this.modelSetting.el,
        this.timeoutSetting.el,
        this.usageRow,
        this.instructionsRow = h('section', { class: 'setting-instructions', id: 'session-instructions', 'aria-labelledby': 'instructions-title', hidden: true }),
        this.settings.el));
    this.settingsDialog.addEventListener('click', (e) => {
      // A click on the backdrop (outside the sheet's box) closes it.
      const r = this.settingsDialog.getBoundingClientRect();
      if (e.target === this.settingsDialog && (e.clientX < r.left || e.clientX > r.right || e.clientY < r.top || e.clientY > r.bottom)) this.settingsDialog.close();
    });
  }

  openSettings() {
    this.menu?.close(false);
    this.draw();
    if (!this.settingsDialog.open) this.settingsDialog.showModal();
  }

  /** drawBranch shows an isolated session's branch in the header and its menu items. */
  drawBranch() {
    const wt = this.state.info.worktree;
    const key = JSON.stringify(wt || null);
    if (this.branchRow.dataset.key !== key) {
      this.branchRow.dataset.key = key;
      clear(this.branchRow).append(branchInfo(wt) || '');
    }
    this.branchRow.hidden = !wt;
    this.branchBtn.hidden = !wt;
    this.shipBtn.hidden = !wt || !!this.state.info.archived;
    // The file history's view is still there: its undo works in the worktree.
    this.changesBtn.textContent = wt ? 'Edits (undo)' : 'Changes';
    const group = wt?.group;
    const n = group ? [...this.app.sessions, ...this.app.archived].filter((x) => x.worktree?.group === group).length : 0;
    this.compareBtn.hidden = !group;
    this.compareBtn.href = group ? `#/compare/${encodeURIComponent(group)}` : '#/';
    this.compareBtn.textContent = `Compare the ${n || ''} copies`.replace('  ', ' ');
  }

  openBranch() {
    this.branchView ||= new BranchChanges(this.app, this.state.id, () => this.state.info.worktree, this.el);
    this.branchView.open();
  }

  openShip() {
    if (this.state.running) {
      this.app.toast('The agent is working: ship once the turn has ended (or stop it).');
      return;
    }
    this.shipSheet ||= new ShipSheet({
      app: this.app, id: this.state.id, getWt: () => this.state.info.worktree, container: this.el,
      // The agent's prompt shows in the conversation at once.
      onResolve: () => this.render(),
    });
    this.shipSheet.open();
  }

  closeDialogs() {
    this.branchView?.dialog.close();
    this.shipSheet?.dialog.close();
    this.menu?.close(false);
    this.settingsDialog?.close();
    this.actions?.close();
    this.filesDialog?.close();
    this.compactDialog?.close();
    this.history?.dialog?.close();
  }
}
