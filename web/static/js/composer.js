// The prompt box: a plain-text editor in which files picked with `@` are
// chips, with the file picker (spec §16.1) and slash-command completion.
//
// - `@` at the start of a word opens the picker. Each change of the query
//   (debounced) sends control.file.search with a new query_id; an answer
//   whose query_id is not the latest is ignored. Match ranges (UTF-16 code
//   units into the path, what JavaScript slices with) are highlighted.
//   ↑/↓ move, Enter or Tab picks, Esc closes; deleting the `@` (or leaving
//   the word) closes it too. Closing without a pick sends
//   control.file.search.cancel for the latest query.
// - A picked file becomes a chip; the prompt is sent as segments (typed
//   text, picked files), never as prompt_text: text that merely looks like
//   a token stays text, because the master escapes every typed segment.
// - A `/` at the start lists the commands; Tab or Enter completes.
// - Enter sends and Shift+Enter starts a new line (on a touch screen Enter
//   is a new line and the Send button sends); Esc stops a running turn.
// - Files join the prompt with the + menu's Attach files and Take a photo
//   (touch screens), a paste of an image or a drop on the prompt box (attach.js):
//   each uploads at once, and Send waits until none is uploading. The
//   prompt carries them as context_files; a refused prompt comes back with
//   its text and its files, the file at fault marked.

import { h, clear, formatBytes } from './util.js';
import { Attachments, icon, faultIndex, byKind } from './attach.js';
import { Menu } from './menu.js';
import { DraftKeeper } from './draft.js';

export const COMMANDS = [
  { name: 'compact', args: '[instruction]', help: "Summarise the agent's history; the instruction says what to keep" },
  { name: 'mode', args: 'default|plan|review', help: 'Switch mode: plan and review may not write', choices: ['default', 'plan', 'review'] },
  { name: 'cost', args: '', help: 'Tokens and cost of this session' },
  { name: 'clear', args: '', help: "Clear the agent's history (agents that take slash commands)" },
  { name: 'cancel', args: '', help: 'Stop the running turn' },
  { name: 'help', args: '', help: 'The commands and keys' },
];

const DEBOUNCE_MS = 60;
const COARSE = matchMedia('(pointer: coarse)');

let popupSeq = 0;

/**
 * highlightPath renders a path with its match ranges marked and its file
 * name in bold. ranges index path in UTF-16 code units.
 */
export function highlightPath(path, ranges, name) {
  const nameStart = name && path.endsWith(name) ? path.length - name.length : path.length;
  const cuts = new Set([0, path.length, nameStart]);
  const rs = (ranges || []).filter((r) => r.start < r.end && r.start >= 0 && r.end <= path.length);
  for (const r of rs) {
    cuts.add(r.start);
    cuts.add(r.end);
  }
  const points = [...cuts].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const a = points[i];
    const b = points[i + 1];
    if (a === b) continue;
    let node = document.createTextNode(path.slice(a, b));
    if (rs.some((r) => r.start <= a && b <= r.end)) node = h('mark', {}, node);
    if (a >= nameStart) node = h('b', {}, node);
    out.push(node);
  }
  return out;
}

export class Composer {
  /**
   * ctrl: caps() → {search, slash, compact, modes, attach}, running(),
   * search(query, onError) → query_id, cancelSearch(query_id),
   * submit(segments, contextFiles, restore) → the prompt's message id,
   * or false when not sent (restore() puts the files back),
   * promptStored(message id) → whether the master holds that prompt,
   * command(name, arg) → bool, cancelTurn(), sessionId(),
   * commands() → the agent's own slash commands (agent.commands),
   * agentCommand(text) → bool, which sends one of them, and
   * openSettings(), which shows the session's settings sheet.
   */
  constructor(ctrl) {
    this.ctrl = ctrl;
    this.chips = new WeakMap(); // chip element → file
    this.popup = null; // {mode: 'file'|'slash', ...}
    this.unknownCommand = null; // an unknown /command already warned about
    this.dismissed = null; // {node, at} of an @ the user closed
    this.queryId = '';
    this.timer = 0;
    const pid = `popup-${++popupSeq}`;
    this.list = h('div', { class: 'popup', id: pid, role: 'listbox', hidden: true });
    this.status = h('div', { class: 'popup-status small muted', role: 'status', 'aria-live': 'polite' });
    this.popupBox = h('div', { class: 'popup-box', hidden: true }, this.list, this.status);
    this.editor = h('div', {
      // An editable combobox (ARIA 1.2): its popup lists files or commands.
      class: 'editor', id: 'prompt', role: 'combobox', 'aria-haspopup': 'listbox', 'aria-label': 'Prompt',
      'aria-describedby': `${pid}-help`, 'aria-autocomplete': 'list', 'aria-controls': pid, 'aria-expanded': 'false',
      'data-placeholder': 'Ask… (@ file, / command)', spellcheck: 'true',
    });
    try {
      this.editor.contentEditable = 'plaintext-only';
    } catch {
      this.editor.contentEditable = 'true';
    }
    if (this.editor.contentEditable !== 'plaintext-only') this.editor.contentEditable = 'true';
    this.stopBtn = h('button', { type: 'button', class: 'btn danger stop', hidden: true, text: 'Stop', 'aria-label': 'Stop the running turn', onclick: () => ctrl.cancelTurn() });
    this.sendBtn = h('button', { type: 'submit', class: 'btn primary send', text: 'Send' });
    this.hint = h('p', { id: `${pid}-help`, class: 'hint small muted' });
    this.setHint();
    this.running = false;
    this.attach = new Attachments({ sessionId: () => ctrl.sessionId(), onChange: () => { this.syncSend(); this.drafts?.changed(); } });
    const picker = (attrs) => {
      const input = h('input', { type: 'file', class: 'file-input', hidden: true, ...attrs });
      input.addEventListener('change', () => {
        if (input.files?.length) this.addFiles(input.files);
        input.value = ''; // the same file again is a new pick
      });
      return input;
    };
    this.fileInput = picker({ multiple: true, 'aria-label': 'Attach files' });
    this.cameraInput = picker({ accept: 'image/*', capture: 'environment', 'aria-label': 'Take a photo' });
    // One + button opens a small menu: attach files, take a photo (touch
    // screens), the session's settings; the prompt box keeps the width.
    this.attachBtn = h('button', { type: 'button', class: 'attach-btn', onclick: () => this.fileInput.click() }, icon('attach'), h('span', { text: 'Attach files' }));
    this.cameraBtn = h('button', { type: 'button', class: 'camera-btn', onclick: () => this.cameraInput.click() }, icon('camera'), h('span', { text: 'Take a photo' }));
    this.settingsBtn = h('button', { type: 'button', class: 'settings-btn', 'aria-haspopup': 'dialog', onclick: () => ctrl.openSettings?.() }, icon('sliders'), h('span', { text: 'Settings…' }));
    this.plus = new Menu({
      id: `${pid}-plus`, label: 'Add to the prompt', cls: 'plus',
      button: { attrs: { class: 'btn icon plus-btn', 'aria-label': 'Attach files, take a photo or change settings' }, children: [icon('plus')] },
      children: [this.fileInput, this.cameraInput],
    });
    this.plus.list.classList.add('plus-menu');
    this.plus.add(this.attachBtn, this.cameraBtn, this.settingsBtn);
    this.form = h('form', { class: 'composer', 'aria-label': 'Prompt' },
      this.popupBox,
      this.attach.el,
      h('div', { class: 'editor-row' },
        this.plus.el,
        this.editor, h('div', { class: 'composer-actions' }, this.stopBtn, this.sendBtn)),
      this.hint);
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    this.editor.addEventListener('keydown', (e) => this.onKey(e));
    this.editor.addEventListener('input', (e) => this.onInput(e));
    this.editor.addEventListener('paste', (e) => {
      e.preventDefault();
      const text = e.clipboardData?.getData('text/plain') || '';
      const files = [...(e.clipboardData?.files || [])];
      // A copied screenshot is only a file; a copied spreadsheet range is
      // text with a picture of it, and the text is what was meant.
      if (files.length && !text) this.addFiles(files, true);
      else this.insertText(text);
    });
    // Files dropped anywhere on the prompt box are attached; dropped text
    // goes into the editor as text.
    this.form.addEventListener('dragover', (e) => {
      if (!e.dataTransfer?.types?.includes('Files')) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
      this.form.classList.add('dragging');
    });
    this.form.addEventListener('dragleave', (e) => {
      if (!this.form.contains(e.relatedTarget)) this.form.classList.remove('dragging');
    });
    this.form.addEventListener('drop', (e) => {
      this.form.classList.remove('dragging');
      const files = [...(e.dataTransfer?.files || [])];
      if (files.length) {
        e.preventDefault();
        this.addFiles(files);
        return;
      }
      if (e.target === this.editor || this.editor.contains(e.target)) {
        e.preventDefault();
        const t = e.dataTransfer?.getData('text/plain');
        if (t) this.insertText(t);
      }
    });
    this.editor.addEventListener('blur', () => {
      // A click on an option keeps the focus (pointerdown is prevented);
      // anything else that takes it closes the popup.
      setTimeout(() => {
        if (document.activeElement !== this.editor) this.close(true);
      }, 150);
    });
    this.onSelection = () => {
      if (this.popup && document.activeElement === this.editor) this.refresh();
    };
    document.addEventListener('selectionchange', this.onSelection);
    this.list.addEventListener('pointerdown', (e) => e.preventDefault());
    // What the box holds is kept as the session's draft (draft.js).
    this.drafts = new DraftKeeper({
      sessionId: () => ctrl.sessionId(), read: () => this.draft(), empty: () => this.isEmpty() && !this.attach.chips.length,
      show: (d) => { this.setSegments(d.segs); this.attach.restoreUploaded(d.files); },
      clearBox: () => { this.clear(); this.attach.take(); this.syncSend(); },
      stored: (id) => !!ctrl.promptStored?.(id),
    });
    this.drafts.restore();
  }

  /** draft is what the box holds, as draft.js keeps it. */
  draft() {
    return { segs: this.segments(), files: this.attach.uploaded() };
  }

  /** accepted is told that the master stored the prompt messageId. */
  accepted(messageId) {
    this.drafts.accepted(messageId);
  }

  destroy() {
    this.drafts.destroy();
    document.removeEventListener('selectionchange', this.onSelection);
    this.close(true);
  }

  setHint() {
    this.hint.textContent = COARSE.matches
      ? '@ picks a file · / lists commands · Send sends'
      : 'Enter sends · Shift+Enter new line · @ picks a file · / commands · Esc stops the agent';
  }

  /**
   * setAttach offers attachments of kinds (the session's capability:
   * text, image, pdf), or none at all: without kinds the + menu has no
   * Attach files, and without image no Take a photo.
   */
  setAttach(kinds) {
    this.attachKinds = kinds;
    this.attachBtn.hidden = !kinds.length;
    this.cameraBtn.hidden = !kinds.includes('image');
  }

  /**
   * addFiles attaches the files of a kind the agent takes; the note says
   * which were not, and why (a paste or a drop bypasses the buttons).
   */
  addFiles(files, pasted = false) {
    const kinds = this.attachKinds || [];
    if (!kinds.length) {
      this.attach.say('This agent takes no attached files.');
      return;
    }
    const { take, refuse } = byKind(kinds, [...files]);
    if (take.length) this.attach.add(take, pasted);
    if (refuse.length) this.attach.say(`This agent takes only ${kinds.join(', ')} files: ${refuse.map((f) => f.name || 'the pasted file').join(', ')} not attached.`);
  }

  /** setRunning shows Stop while a turn runs. */
  setRunning(running, canCancel) {
    this.stopBtn.hidden = !(running && canCancel);
    // Stop takes Send's place while a turn runs: the box keeps its width.
    this.sendBtn.hidden = !this.stopBtn.hidden;
    this.running = running;
    this.syncSend();
  }

  /** syncSend disables Send while a turn runs or a file uploads. */
  syncSend() {
    const uploading = this.attach.busy();
    this.sendBtn.disabled = this.running || uploading;
    this.sendBtn.title = this.running ? 'The agent is working: wait, or stop it' : uploading ? 'Wait for the files to upload' : '';
    if (!uploading && this.attach.note.textContent.startsWith('Wait for')) this.attach.say('');
  }

  /**
   * refused shows why a prompt was refused and puts its files back; a
   * field naming one of its context_files marks that file's chip.
   */
  refused(chips, err) {
    this.attach.restore(chips);
    // context_files held the uploaded chips, in order.
    const at = chips.filter((c) => c.state === 'done')[faultIndex(err.field)] || null;
    if (at) {
      at.state = 'error';
      at.error = { code: err.code, field: err.field, message: err.message };
      this.attach.draw(at);
    }
    const code = err.code ? ` (${err.code})` : '';
    const back = `Your text${chips.length ? ' and files are' : ' is'} back in the box`;
    // A marked chip says why itself; the note then only says what to do.
    this.attach.say(at
      ? `Not sent${code}: ${back}. Remove ${at.name}, then send again.`
      : `Not sent: ${err.message}${code}. ${back}: fix it, then send again.`);
    this.syncSend();
  }

  focus() {
    this.editor.focus();
  }

  isEmpty() {
    return this.segments().length === 0;
  }

  /** segments reads the editor: typed text and picked files, in order. */
  segments() {
    const segs = [];
    let text = '';
    const flush = () => {
      if (text) segs.push({ kind: 'text', text });
      text = '';
    };
    const walk = (node) => {
      for (const c of node.childNodes) {
        if (c.nodeType === Node.TEXT_NODE) {
          text += c.data;
        } else if (c.nodeType === Node.ELEMENT_NODE) {
          const file = this.chips.get(c);
          if (file) {
            flush();
            segs.push({ kind: 'file', file: { ...file } });
          } else if (c.tagName === 'BR') {
            text += '\n';
          } else {
            if (text && !text.endsWith('\n')) text += '\n';
            walk(c);
          }
        }
      }
    };
    walk(this.editor);
    flush();
    for (const s of segs) if (s.kind === 'text') s.text = s.text.replace(/\u00a0/g, ' ');
    // Leading and trailing white space of the whole prompt carries nothing.
    while (segs.length && segs[0].kind === 'text' && !segs[0].text.trimStart()) segs.shift();
    while (segs.length && segs[segs.length - 1].kind === 'text' && !segs[segs.length - 1].text.trimEnd()) segs.pop();
    if (segs.length && segs[0].kind === 'text') segs[0].text = segs[0].text.trimStart();
    if (segs.length && segs[segs.length - 1].kind === 'text') segs[segs.length - 1].text = segs[segs.length - 1].text.trimEnd();
    return segs;
  }

  plainText() {
    return this.segments().map((s) => (s.kind === 'text' ? s.text : `@${s.file.path}`)).join('');
  }

  clear() {
    clear(this.editor);
    if (this.unknownCommand) this.attach.say('');
    this.unknownCommand = null;
    this.dismissed = null;
    this.close(false);
  }

  /** keepSelected leaves text alone in the box, all of it selected. */
  keepSelected(text) {
    if (this.popup) this.close(true);
    clear(this.editor);
    this.editor.appendChild(document.createTextNode(text));
    this.editor.focus();
    const r = document.createRange();
    r.selectNodeContents(this.editor);
    const sel = getSelection();
    sel.removeAllRanges();
    sel.addRange(r);
  }

  /** setText replaces the editor's content (a failed prompt comes back). */
  setSegments(segs) {
    clear(this.editor);
    for (const s of segs) {
      if (s.kind === 'text') this.editor.appendChild(document.createTextNode(s.text));
      else this.editor.appendChild(this.makeChip(s.file));
    }
    this.drafts?.changed();
  }

  insertText(t) {
    if (!t) return;
    this.editor.focus();
    if (!document.execCommand('insertText', false, t)) {
      const sel = getSelection();
      if (!sel.rangeCount) return;
      const r = sel.getRangeAt(0);
      r.deleteContents();
      const n = document.createTextNode(t);
      r.insertNode(n);
      r.setStartAfter(n);
      r.collapse(true);
      sel.removeAllRanges();
      sel.addRange(r);
      this.onInput({});
    }
  }

  submit() {
    if (this.popup) this.close(true);
    const segs = this.segments();
    const att = this.attach;
    if (!segs.length) {
      if (att.chips.length) att.say('Add a few words for the agent about the attached files.');
      return;
    }
    const only = segs.length === 1 && segs[0].kind === 'text' ? segs[0].text : '';
    const m = /^\/([A-Za-z0-9][A-Za-z0-9_:.-]*)(?:\s+([\s\S]*))?$/.exec(only);
    // The agent's own commands go to it as slash commands (ferry's own
    // of the same name win).
    if (m && !COMMANDS.some((c) => c.name === m[1]) && this.agentCommands().some((c) => c.name === m[1])) {
      if (this.ctrl.agentCommand(only.trim())) this.clear();
      else this.keepSelected(only);
      return;
    }
    if (m && COMMANDS.some((c) => c.name === m[1])) {
      if (this.ctrl.command(m[1], (m[2] || '').trim())) this.clear();
      // Refused (the note says why): the command stays alone in the box,
      // selected, so what is typed next replaces it instead of gluing on.
      else this.keepSelected(only);
      return;
    }
    // An unknown /word is most likely a typo: say so and send nothing; the
    // same text sent again goes to the agent as it is.
    if (m && this.unknownCommand !== only) {
      this.unknownCommand = only;
      att.say(`/${m[1]} is not a command here (/help lists them), so it was not sent. Send it again to send it to the agent as it is.`);
      this.keepSelected(only);
      return;
    }
    if (att.busy()) {
      att.say('Wait for the files to upload, or remove them, then send.');
      return;
    }
    if (att.failed().length) {
      att.say(`Remove the files that could not be attached (${att.failed().map((c) => c.name).join(', ')}), then send.`);
      return;
    }
    const chips = att.chips.slice();
    this.drafts.sending(this.draft());
    const sent = this.ctrl.submit(segs, att.contextFiles(), (err) => this.refused(chips, err));
    if (sent) {
      this.drafts.sentAs(sent);
      this.clear();
      att.take();
      this.syncSend();
    }
  }

  onKey(e) {
    if (e.isComposing) return;
    if (this.popup) {
      const n = this.popup.items.length;
      switch (e.key) {
        case 'ArrowDown':
        case 'ArrowUp':
          e.preventDefault();
          if (n) {
            this.popup.sel = (this.popup.sel + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
            this.popup.navigated = true;
            this.renderPopup();
          }
          return;
        case 'Enter':
        case 'Tab':
          if (e.shiftKey && e.key === 'Enter') break;
          if (this.popup.mode === 'slash' && e.key === 'Enter' && this.slashExact()) {
            e.preventDefault();
            this.close(false);
            this.submit();
            return;
          }
          e.preventDefault();
          if (this.popup.mode === 'file' && this.popup.pending && !this.popup.navigated) {
            // The list is for an older query: pick the best match of what
            // was typed once its answer is in.
            this.popup.pickWhenReady = true;
            if (this.timer) this.flushSearch();
            return;
          }
          if (n) this.choose(this.popup.sel);
          else if (e.key === 'Enter') this.close(true, true);
          return;
        case 'Escape':
          e.preventDefault();
          e.stopPropagation();
          this.close(true, true);
          return;
        default:
          break;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !COARSE.matches) {
      e.preventDefault();
      this.submit();
      return;
    }
    if (e.key === 'Escape' && this.ctrl.running()) {
      e.preventDefault();
      this.ctrl.cancelTurn();
    }
  }

  onInput(e) {
    if (e && e.isComposing) {
      this.refresh();
      return;
    }
    if (!this.editor.textContent && !this.editor.querySelector('.chip')) clear(this.editor); // :empty shows the placeholder
    this.refresh();
    this.drafts.changed();
  }

  caret() {
    const sel = getSelection();
    if (!sel || !sel.rangeCount || !sel.isCollapsed) return null;
    const r = sel.getRangeAt(0);
    if (!this.editor.contains(r.startContainer)) return null;
    return { node: r.startContainer, offset: r.startOffset };
  }

  /** findAt returns the @word the caret is in: {node, at, end, query}. */
  findAt() {
    const c = this.caret();
    if (!c || c.node.nodeType !== Node.TEXT_NODE) return null;
    const d = c.node.data;
    let i = c.offset - 1;
    while (i >= 0 && d[i] !== '@') {
      if (/\s/.test(d[i])) return null;
      i--;
    }
    if (i < 0) return null;
    if (i > 0 && !/\s/.test(d[i - 1])) return null; // mid-word: an e-mail address, not the picker
    if (i === 0) {
      const prev = c.node.previousSibling;
      if (prev && prev.nodeType === Node.TEXT_NODE && prev.data && !/\s$/.test(prev.data)) return null;
    }
    let end = c.offset;
    while (end < d.length && !/\s/.test(d[end])) end++;
    return { node: c.node, at: i, end, query: d.slice(i + 1, c.offset) };
  }

  /** agentCommands are the session's agent's own slash commands not named like ferry's. */
  agentCommands() {
    if (!this.ctrl.caps().slash) return [];
    return (this.ctrl.commands?.() || []).filter((c) => !COMMANDS.some((x) => x.name === c.name));
  }

  slashState() {
    if (this.editor.querySelector('.chip')) return null;
    const t = this.editor.textContent;
    let m = /^\/([A-Za-z0-9_:.-]*)$/.exec(t);
    if (m) {
      const own = this.agentCommands().map((c) => ({ name: c.name, args: c.hint || '', help: c.description || 'a command of the agent', agent: true }));
      const items = [...COMMANDS, ...own].filter((c) => c.name.startsWith(m[1])).map((c) => ({ kind: 'cmd', cmd: c, text: `/${c.name}` }));
      return items.length ? { mode: 'slash', items, typed: t } : null;
    }
    m = /^\/mode ([a-z]*)$/.exec(t);
    if (m) {
      const modes = this.ctrl.caps().modes || [];
      const items = modes.filter((x) => x.startsWith(m[1])).map((x) => ({ kind: 'arg', text: `/mode ${x}`, label: x }));
      return items.length ? { mode: 'slash', items, typed: t } : null;
    }
    return null;
  }

  slashExact() {
    const p = this.popup;
    const item = p.items[p.sel];
    return item && (item.text === p.typed || (item.kind === 'cmd' && !item.cmd.args && item.text === p.typed));
  }

  /** refresh opens, updates or closes the popup after an edit or a caret move. */
  refresh() {
    const at = this.findAt();
    if (!at) this.dismissed = null;
    if (at) {
      if (this.dismissed && this.dismissed.node === at.node && this.dismissed.at === at.at) return;
      if (!this.popup || this.popup.mode !== 'file') {
        this.close(true);
        if (!this.ctrl.caps().search) {
          this.openPopup({ mode: 'file', items: [], sel: 0, at, query: null, message: 'This machine does not offer file search.' });
          return;
        }
        this.openPopup({ mode: 'file', items: [], sel: 0, at, query: null, message: 'Searching…' });
      }
      this.popup.at = at;
      if (this.popup.query !== at.query && this.ctrl.caps().search) {
        this.popup.query = at.query;
        this.popup.pending = true;
        this.popup.pickWhenReady = false;
        clearTimeout(this.timer);
        if (at.query === '') this.flushSearch();
        else this.timer = setTimeout(() => this.flushSearch(), DEBOUNCE_MS);
        this.popup.navigated = false;
        this.renderPopup();
      }
      return;
    }
    const slash = this.slashState();
    if (slash) {
      if (this.popup && this.popup.mode === 'file') this.close(true);
      const prev = this.popup?.mode === 'slash' ? this.popup.items[this.popup.sel]?.text : '';
      const sel = Math.max(0, slash.items.findIndex((x) => x.text === prev));
      this.openPopup({ ...slash, sel });
      return;
    }
    if (this.popup) this.close(true);
  }

  /** flushSearch sends the search for the popup's query now. */
  flushSearch() {
    clearTimeout(this.timer);
    this.timer = 0;
    if (this.popup && this.popup.mode === 'file') this.search(this.popup.query);
  }

  search(query) {
    const prev = this.queryId;
    this.queryId = this.ctrl.search(query, (id, err) => {
      if (id !== this.queryId || !this.popup) return;
      this.popup.pending = false;
      this.popup.pickWhenReady = false;
      this.popup.items = [];
      this.popup.message = err.code === 'unsupported' ? 'This machine does not offer file search.' : `Search failed: ${err.message}`;
      this.renderPopup();
    });
    if (!this.popup) return;
    this.popup.pending = true;
    if (!this.popup.items.length || prev === '') this.popup.message = 'Searching…';
    this.renderPopup();
  }

  /** onCandidates takes a session.file.candidates payload. */
  onCandidates(p) {
    if (!this.popup || this.popup.mode !== 'file' || p.query_id !== this.queryId) return false; // stale
    this.popup.pending = !!this.timer; // a newer query may be about to go
    this.popup.navigated = false;
    this.popup.items = (p.candidates || []).map((c) => ({ kind: 'file', file: c }));
    this.popup.sel = 0;
    this.popup.total = p.total_count;
    this.popup.message = this.popup.items.length ? '' : this.popup.query ? 'No file matches.' : 'No files.';
    if (this.popup.pickWhenReady && !this.popup.pending) {
      this.popup.pickWhenReady = false;
      if (this.popup.items.length) {
        this.choose(0);
        return true;
      }
    }
    this.renderPopup();
    return true;
  }

  openPopup(p) {
    this.popup = p;
    this.popupBox.hidden = false;
    this.list.hidden = false;
    this.editor.setAttribute('aria-expanded', 'true');
    this.list.setAttribute('aria-label', p.mode === 'file' ? 'Files' : 'Commands');
    this.renderPopup();
  }

  /**
   * close hides the popup. cancel sends control.file.search.cancel for the
   * latest query; dismiss keeps this @ from reopening it.
   */
  close(cancel, dismiss = false) {
    clearTimeout(this.timer);
    this.timer = 0;
    const p = this.popup;
    if (!p) return;
    if (p.mode === 'file' && cancel && this.queryId) this.ctrl.cancelSearch(this.queryId);
    if (p.mode === 'file') this.queryId = '';
    if (dismiss && p.mode === 'file' && p.at) this.dismissed = { node: p.at.node, at: p.at.at };
    this.popup = null;
    this.popupBox.hidden = true;
    this.list.hidden = true;
    clear(this.list);
    this.status.textContent = '';
    this.editor.setAttribute('aria-expanded', 'false');
    this.editor.removeAttribute('aria-activedescendant');
  }

  renderPopup() {
    const p = this.popup;
    if (!p) return;
    clear(this.list);
    const base = this.list.id;
    p.items.forEach((it, i) => {
      const id = `${base}-o${i}`;
      let body;
      if (it.kind === 'file') {
        const f = it.file;
        body = [h('span', { class: 'opt-path' }, highlightPath(f.path, f.match_ranges, f.name)),
          h('span', { class: 'opt-meta small muted', text: formatBytes(f.size_bytes) })];
      } else if (it.kind === 'cmd') {
        body = [h('span', { class: 'opt-path' }, h('b', { text: `/${it.cmd.name}` }), it.cmd.args ? h('span', { class: 'muted', text: ` ${it.cmd.args}` }) : null),
          h('span', { class: 'opt-meta small muted', text: it.cmd.help })];
      } else {
        body = [h('span', { class: 'opt-path' }, h('b', { text: it.label }))];
      }
      const opt = h('div', { class: 'opt', role: 'option', id, 'aria-selected': i === p.sel ? 'true' : 'false', dataset: { index: String(i) } }, body);
      opt.addEventListener('click', () => this.choose(i));
      this.list.appendChild(opt);
    });
    if (p.items.length) {
      this.editor.setAttribute('aria-activedescendant', `${base}-o${p.sel}`);
      this.list.children[p.sel]?.scrollIntoView({ block: 'nearest' });
    } else {
      this.editor.removeAttribute('aria-activedescendant');
    }
    let msg = p.message || '';
    if (p.mode === 'file' && p.items.length) {
      msg = `${p.items.length}${p.total > p.items.length ? ` of ${p.total}` : ''} file${p.items.length === 1 ? '' : 's'}: ↑↓ to move, Enter or Tab to pick, Esc to close`;
    }
    this.status.textContent = msg;
    this.popupBox.dataset.mode = p.mode;
    this.list.setAttribute('aria-busy', p.mode === 'file' && p.pending ? 'true' : 'false');
  }

  choose(i) {
    const p = this.popup;
    const it = p?.items[i];
    if (!it) return;
    if (it.kind === 'file') {
      this.pick(it.file);
      return;
    }
    const text = it.kind === 'cmd' && it.cmd.args ? `${it.text} ` : it.text;
    this.close(false);
    clear(this.editor).appendChild(document.createTextNode(text));
    placeCaretAtEnd(this.editor);
    this.editor.focus();
    this.refresh();
  }

  makeChip(f) {
    const chip = h('span', { class: 'chip file', contenteditable: 'false', title: f.path, dataset: { path: f.path } },
      h('span', { class: 'sr-only', text: 'file ' }), f.display_path || f.path);
    this.chips.set(chip, f);
    return chip;
  }

  /** pick replaces the @word with a chip for candidate c. */
  pick(c) {
    const { at } = this.popup;
    const file = { path: c.path, display_path: c.path };
    if (c.workspace_id) file.workspace_id = c.workspace_id; // scope global: path is relative to it
    if (c.name) file.name = c.name;
    if (c.extension) file.extension = c.extension;
    if (c.mime_type) file.mime_type = c.mime_type;
    if (typeof c.size_bytes === 'number') file.size_bytes = c.size_bytes;
    this.queryId = ''; // answered: nothing to cancel
    this.close(false);
    const node = at.node;
    if (!node.isConnected) return;
    const r = document.createRange();
    r.setStart(node, Math.min(at.at, node.length));
    r.setEnd(node, Math.min(at.end, node.length));
    r.deleteContents();
    const chip = this.makeChip(file);
    r.insertNode(chip);
    const next = chip.nextSibling;
    let space;
    if (next && next.nodeType === Node.TEXT_NODE && /^\s/.test(next.data)) {
      space = next;
    } else {
      space = document.createTextNode(' ');
      chip.after(space);
    }
    const sel = getSelection();
    const c2 = document.createRange();
    c2.setStart(space, 1);
    c2.collapse(true);
    sel.removeAllRanges();
    sel.addRange(c2);
    this.editor.focus();
  }
}

function placeCaretAtEnd(el) {
  const r = document.createRange();
  r.selectNodeContents(el);
  r.collapse(false);
  const sel = getSelection();
  sel.removeAllRanges();
  sel.addRange(r);
}
