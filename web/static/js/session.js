// SessionState is what the UI knows of one session: its transcript (prompts,
// turns with their text, tool calls, interactions and artifacts, notes), the
// mode, and where it stands in the session's history (epoch, last seq).
// It holds no DOM: the transcript view renders it. Kept per session for the
// page's lifetime, so reopening a session resumes from its last seq.
//
// Resume rules (docs/live.md): events carrying a seq are applied once and in
// order. One at or below lastSeq is a duplicate and dropped; one that skips
// a seq, or names another epoch, means this history cannot be continued:
// accept() says "resync" and the caller subscribes again from lastSeq. A
// master.subscribed with recovered:false replaces everything with its
// snapshot. Events without a seq (open interactions re-sent on subscribe)
// are applied by id, idempotently.

import { parsePrompt } from './fileref.js';
import { timeoutLabel } from './timeoutsetting.js';
import { applyRestored } from './restore.js';
import { errorNote, codeLine } from './codes.js';
import { recheckArtifacts } from './artifactmarker.js';
import { shipOutcome } from './worktree.js';
import { parseTodos } from './todos.js';

export const TURN_LABELS = {
  running: 'Running',
  waiting: 'Waiting for you',
  done: 'Done',
  cancelled: 'Cancelled',
  error: 'Error',
  stopped: 'Stopped',
};

export class SessionState {
  constructor(info) {
    this.id = info.id;
    this.info = { ...info };
    this.epoch = '';
    this.lastSeq = 0;
    this.liveFrom = 0;
    this.subscribed = false;
    this.summary = null; // why the history is a snapshot, when it is
    this.reset();
  }

  reset() {
    this.items = []; // {kind: 'prompt'|'turn'|'note', key, ref (the prompt or turn)}
    this.prompts = new Map(); // message_id → prompt
    this.turns = new Map(); // turn_id → turn
    this.interactions = new Map(); // interaction_id → interaction
    this.artifacts = new Map(); // artifact_id → artifact (registration order)
    this.mode = this.info.mode || 'default';
    this.settings = this.info.settings || null; // {permission_timeout_ms, permission_timeout_set, model, effort}
    this.commands = []; // the agent's own slash commands (agent.commands)
    this.instructions = []; // the instruction files in its system prompt (agent.instructions)
    // The agent's todo list: the input of the last TodoWrite call that
    // finished ok (todos.js); todoCalls the lists of calls still running.
    this.todos = null;
    this.todoCalls = new Map();
    // What the session's agent really offers (agent.capabilities), in place
    // of its adapter's declaration; null: the declaration holds.
    this.capabilities = null;
    this.running = this.info.state === 'running';
    this.current = ''; // the open turn's id
    this.version = 0; // bumped on every change: the header re-renders
    this.dirty = new Set(); // item keys to re-render
    this.noteSeq = 0;
  }

  /** subscribePayload is the payload of ui.session.subscribe. */
  subscribePayload() {
    return this.epoch ? { after_seq: this.lastSeq, epoch: this.epoch } : { after_seq: 0 };
  }

  touch(key) {
    this.version++;
    if (key) this.dirty.add(key);
  }

  /** takeDirty returns and forgets the keys changed since the last call. */
  takeDirty() {
    const d = this.dirty;
    this.dirty = new Set();
    return d;
  }

  /** onSubscribed applies master.subscribed. */
  onSubscribed(p) {
    this.subscribed = true;
    if (!p.recovered) {
      this.loadSnapshot(p);
    } else {
      this.epoch = p.epoch;
    }
    this.liveFrom = p.last_seq;
    this.touch();
    return { reset: !p.recovered };
  }

  loadSnapshot(p) {
    const snap = p.snapshot || { turns: [], session: this.info };
    if (snap.session) this.info = { ...this.info, ...snap.session };
    this.reset();
    this.epoch = p.epoch;
    this.lastSeq = p.last_seq;
    this.summary = p.reason || 'snapshot';
    this.commands = snap.commands || [];
    this.instructions = snap.instructions || [];
    this.capabilities = snap.capabilities || null;
    if (p.reason === 'retention') this.addNote('info', 'Older events are no longer kept: this is a summary of the session so far.');
    if (p.reason === 'epoch') this.addNote('info', "The session's history was reset on the master: this is a summary of it.");
    for (const t of snap.turns || []) {
      const pkey = `snap-${t.turn_id}`;
      const prompt = { key: pkey, id: pkey, parts: parsePrompt(t.prompt || '', [], { anyRef: true }), inputType: 'text', status: 'sent', turnId: t.turn_id };
      this.prompts.set(pkey, prompt);
      this.items.push({ kind: 'prompt', key: pkey, ref: prompt });
      const turn = this.newTurn(t.turn_id, pkey);
      if (t.text) turn.blocks.push({ kind: 'text', text: t.text, v: 1 });
      turn.text = t.text || '';
      if (t.done) turn.state = endState(t.cancelled, t.stop_reason);
      turn.stopReason = t.stop_reason || '';
      if (!t.done) this.current = t.turn_id;
    }
    for (const a of snap.artifacts || []) this.addArtifact(a);
    for (const req of snap.open_interactions || []) this.addInteraction(req, false);
    this.running = snap.session?.state === 'running' || !!this.current;
  }

  /**
   * accept applies one message of this session. It returns "resync" when
   * the history cannot be continued from here, "dup" for a duplicate, else
   * "ok".
   */
  accept(msg) {
    if (typeof msg.seq === 'number') {
      if (msg.epoch && this.epoch && msg.epoch !== this.epoch) return 'resync';
      if (msg.seq <= this.lastSeq) return 'dup';
      if (msg.seq !== this.lastSeq + 1) return 'resync';
      if (!this.epoch && msg.epoch) this.epoch = msg.epoch;
      this.lastSeq = msg.seq;
    }
    this.apply(msg);
    return 'ok';
  }

  newTurn(id, promptKey = '') {
    let t = this.turns.get(id);
    if (t) return t;
    t = { key: `turn-${id}`, id, promptKey, blocks: [], tools: new Map(), state: 'running', text: '', usage: null, errors: [], mode: '', adapter: '', stopReason: '' };
    this.turns.set(id, t);
    this.items.push({ kind: 'turn', key: t.key, ref: t });
    return t;
  }

  turn(id) {
    return this.turns.get(id) || this.newTurn(id);
  }

  addNote(level, text) {
    const key = `note-${++this.noteSeq}`;
    this.items.push({ kind: 'note', key, level, text });
    this.touch(key);
    return key;
  }

  /**
   * runOutput shows a script's run in the conversation (what: setup, the
   * workspace's .ferry/setup; test, its .ferry/test): one item per run,
   * updated in place from running to ok or failed.
   */
  runOutput(what, state, output, exitCode) {
    const last = [...this.items].reverse().find((i) => i.kind === 'output' && i.what === what);
    let item = last;
    if (!item || (item.state !== 'running' && state === 'running') || (item.state !== 'running' && what === 'test')) {
      item = { kind: 'output', key: `output-${++this.noteSeq}`, what, state: '', output: '', exitCode: null, v: 0 };
      this.items.push(item);
    }
    item.state = state || 'running';
    if (typeof output === 'string') item.output = output;
    item.exitCode = typeof exitCode === 'number' ? exitCode : null;
    item.v++;
    this.touch(item.key);
    return item;
  }

  addArtifact(a) {
    if (this.artifacts.has(a.artifact_id)) return false;
    this.artifacts.set(a.artifact_id, { ...a });
    const t = this.turns.get(a.turn_id);
    if (t) {
      t.blocks.push({ kind: 'artifact', id: a.artifact_id, v: 1 });
      this.touch(t.key);
    }
    this.touch();
    return true;
  }

  addInteraction(req, live) {
    const known = this.interactions.get(req.interaction_id);
    if (known) return known;
    const it = { id: req.interaction_id, req, status: 'open', seenAt: Date.now(), live, resolved: null, sending: false, error: '' };
    this.interactions.set(it.id, it);
    const t = this.turn(req.turn_id);
    t.blocks.push({ kind: 'interaction', id: it.id, v: 1 });
    if (!isEnded(t)) t.state = 'waiting';
    this.touch(t.key);
    return it;
  }

  /** addPending shows a prompt the user just sent, before the master echoes it. */
  addPending(id, parts, inputType, files = []) {
    const p = { key: `prompt-${id}`, id, parts, inputType, files: attachedFiles(files), status: 'sending', turnId: '' };
    this.prompts.set(id, p);
    this.items.push({ kind: 'prompt', key: p.key, ref: p });
    this.touch(p.key);
    return p;
  }

  /**
   * promptFailed marks a prompt the master or the client refused: the error
   * answering this UI's own prompt, or the stored agent.prompt.refused any
   * UI gets. Both may come for one prompt: it is marked once, the same way.
   */
  promptFailed(id, err) {
    const p = this.prompts.get(id);
    if (!p || p.turnId) return;
    p.status = 'failed';
    p.error = { code: err?.code || '', message: err?.message || String(err || ''), field: err?.field || '' };
    this.touch(p.key);
  }

  apply(msg) {
    const p = msg.payload || {};
    switch (msg.type) {
      case 'control.prompt.request': {
        let pr = this.prompts.get(msg.message_id);
        if (!pr) {
          pr = { key: `prompt-${msg.message_id}`, id: msg.message_id, turnId: '' };
          this.prompts.set(msg.message_id, pr);
          this.items.push({ kind: 'prompt', key: pr.key, ref: pr });
        }
        pr.parts = parsePrompt(p.prompt_text || '', p.file_references || []);
        pr.inputType = p.input_type || 'text';
        pr.files = attachedFiles(p.context_files);
        pr.stored = true; // it reached the master: a refusal now is its client's
        if (pr.status !== 'failed') pr.status = 'sent';
        this.touch(pr.key);
        break;
      }
      case 'session.opened':
        if (p.mode) this.mode = p.mode;
        if (p.settings) this.settings = p.settings;
        if (p.worktree) this.info.worktree = p.worktree;
        this.touch();
        break;
      // An isolated session's worktree (docs/worktrees.md).
      case 'session.worktree.status':
        if (p.worktree) this.info.worktree = p.worktree;
        this.touch();
        break;
      case 'session.worktree.setup':
        this.runOutput('setup', p.state, p.output, p.exit_code);
        break;
      case 'session.worktree.tested':
        // Stored and relayed to every subscriber: the asker's own reply
        // (no seq) would show it twice.
        if (typeof msg.seq !== 'number') break;
        this.runOutput('test', p.ran === false ? 'none' : p.passed ? 'ok' : 'failed', p.output, p.exit_code);
        if (this.info.worktree && p.ran !== false) this.info.worktree = { ...this.info.worktree, test: p.passed ? 'passed' : 'failed' };
        break;
      case 'session.worktree.shipped': {
        if (p.worktree) this.info.worktree = p.worktree;
        if (typeof msg.seq !== 'number') break; // as tested
        const out = shipOutcome(p.result || {}, p.worktree || this.info.worktree);
        this.addNote('info', `Shipped: ${[...out.lines, ...out.links.map((l) => `${l.text}: ${l.href}`)].join(' ')}`);
        break;
      }
      case 'session.settings': {
        // The message carries every setting: say only what changed (a
        // model pick must not read as a new timeout).
        const was = this.settings;
        this.settings = p;
        if (!was || was.permission_timeout_ms !== p.permission_timeout_ms || !!was.permission_timeout_set !== !!p.permission_timeout_set) {
          this.addNote('info', p.permission_timeout_ms
            ? `Questions now time out after ${timeoutLabel(p.permission_timeout_ms)}${p.permission_timeout_set ? '' : " (the machine's default)"}.`
            : 'Questions now wait for an answer without a time limit.');
        }
        if (was && ((was.model || '') !== (p.model || '') || (was.effort || '') !== (p.effort || ''))) {
          this.addNote('info', `From the next turn: ${p.model || 'the default model'}${p.effort ? `, thinking ${p.effort}` : ''}.`);
        }
        break;
      }
      case 'agent.turn.started': {
        const pr = this.prompts.get(msg.parent_id);
        const t = this.newTurn(p.turn_id, pr ? pr.key : '');
        if (pr) {
          pr.turnId = p.turn_id;
          pr.status = 'sent';
          this.touch(pr.key);
        }
        t.mode = p.mode;
        t.adapter = p.adapter || '';
        t.inputType = p.input_type;
        if (p.mode) this.mode = p.mode;
        this.running = true;
        this.current = p.turn_id;
        this.touch(t.key);
        break;
      }
      case 'agent.text.delta': {
        const t = this.turn(p.turn_id);
        const ch = p.channel || 'text';
        const last = t.blocks[t.blocks.length - 1];
        if (last && last.kind === ch) {
          last.text += p.delta;
          last.v++;
        } else {
          t.blocks.push({ kind: ch, text: p.delta, v: 1 });
        }
        if (ch === 'text') t.text += p.delta;
        this.touch(t.key);
        break;
      }
      case 'agent.tool.started': {
        const t = this.turn(p.turn_id);
        const tool = this.tool(t, p.tool_use_id, p.tool_name, p.parent_tool_use_id);
        tool.name = p.tool_name;
        tool.input = p.input || {};
        this.bumpTool(t, tool);
        // A sub-agent's list (parent_tool_use_id) is its own, not the session's.
        const todos = p.tool_name === 'TodoWrite' && !p.parent_tool_use_id ? parseTodos(p.input) : null;
        if (todos) this.todoCalls.set(p.tool_use_id, todos);
        break;
      }
      case 'agent.tool.updated': {
        const t = this.turn(p.turn_id);
        const tool = this.tool(t, p.tool_use_id, '', p.parent_tool_use_id);
        if (p.output_delta) tool.output += p.output_delta;
        if (p.status) tool.statusLine = p.status;
        this.bumpTool(t, tool);
        break;
      }
      case 'agent.tool.finished': {
        const t = this.turn(p.turn_id);
        const tool = this.tool(t, p.tool_use_id, p.tool_name, p.parent_tool_use_id);
        tool.status = p.status;
        if (typeof p.output === 'string') tool.output = p.output;
        tool.diff = p.diff || null;
        tool.errorCode = p.error_code || 0;
        tool.images = Array.isArray(p.images) ? p.images : [];
        this.bumpTool(t, tool);
        if (this.todoCalls.has(p.tool_use_id)) {
          // Only a list the agent accepted replaces the one shown.
          if (p.status === 'ok') this.todos = this.todoCalls.get(p.tool_use_id);
          this.todoCalls.delete(p.tool_use_id);
          this.touch();
        }
        break;
      }
      case 'agent.usage': {
        const t = this.turn(p.turn_id);
        t.usage = p;
        this.touch(t.key);
        break;
      }
      case 'agent.artifact':
        this.addArtifact(p);
        break;
      case 'agent.interaction.request':
        this.addInteraction(p, typeof msg.seq === 'number' && msg.seq > this.liveFrom);
        break;
      case 'agent.interaction.resolved': {
        const it = this.interactions.get(p.interaction_id);
        if (!it) break;
        it.status = p.outcome;
        it.resolved = p;
        it.sending = false;
        const t = this.turns.get(it.req.turn_id);
        if (t) {
          this.bumpBlock(t, 'interaction', it.id);
          if (t.state === 'waiting' && !this.openIn(t)) t.state = 'running';
        }
        this.touch();
        break;
      }
      case 'agent.commands':
        this.commands = p.commands || [];
        this.touch();
        break;
      case 'agent.instructions':
        this.instructions = p.files || [];
        this.touch();
        break;
      case 'agent.capabilities':
        this.capabilities = p.adapter || null;
        this.touch();
        break;
      case 'agent.prompt.refused':
        // The client did not run the prompt (stored by the master, so every
        // UI sees it, also after a reload and when its sender is gone).
        this.promptFailed(msg.parent_id, p);
        break;
      case 'agent.mode.changed':
        this.mode = p.mode;
        this.addNote('mode', `Mode switched to ${p.mode}.`);
        break;
      case 'agent.files.restored':
        applyRestored(this, msg);
        // Which version a file card's Download gives may have changed.
        recheckArtifacts();
        break;
      case 'agent.compaction.done':
        this.addNote('info', `History compacted: ${p.tokens_before.toLocaleString()} → ${p.tokens_after.toLocaleString()} tokens${typeof p.achieved_ratio === 'number' ? ` (${Math.round(p.achieved_ratio * 100)} % of before)` : ''}.`);
        break;
      case 'agent.error':
        if (p.turn_id && this.turns.has(p.turn_id)) {
          const t = this.turns.get(p.turn_id);
          t.errors.push(p);
          t.blocks.push({ kind: 'error', error: p, v: 1 });
          this.touch(t.key);
        } else {
          this.addNote('error', errorNote(p));
        }
        break;
      case 'agent.text.done': {
        const t = this.turn(p.turn_id);
        t.state = endState(p.is_cancelled, p.stop_reason);
        t.stopReason = p.stop_reason || (p.is_cancelled ? 'cancelled' : '');
        if (!t.text && p.text) {
          t.blocks.push({ kind: 'text', text: p.text, v: 1 });
          t.text = p.text;
        }
        if (p.result !== undefined && p.result !== null) t.result = p.result;
        for (const b of t.blocks) {
          if (b.kind !== 'interaction') continue;
          const it = this.interactions.get(b.id);
          if (it && it.status === 'open') {
            it.status = 'cancelled';
            b.v++;
          }
        }
        for (const tool of t.tools.values()) {
          if (tool.status === 'running') {
            tool.status = t.state === 'cancelled' ? 'cancelled' : 'unfinished';
            this.bumpTool(t, tool);
          }
        }
        if (this.current === p.turn_id) this.current = '';
        this.running = false;
        this.touch(t.key);
        break;
      }
      default:
        break;
    }
  }

  /**
   * tool returns the call id of turn t, made when it is new: a block of
   * the turn, or, for a sub-agent's call (parent: the Task call's id,
   * parent_tool_use_id), a step of its Task call, which has no block of
   * its own and is shown folded under the call.
   */
  tool(t, id, name, parent = '') {
    let tool = t.tools.get(id);
    if (!tool) {
      tool = { id, name: name || 'tool', input: {}, status: 'running', output: '', statusLine: '', diff: null, errorCode: 0, parent: parent || '', steps: [] };
      t.tools.set(id, tool);
      if (tool.parent) {
        this.tool(t, tool.parent, 'Task').steps.push(id);
      } else {
        t.blocks.push({ kind: 'tool', id, v: 0 });
      }
    }
    return tool;
  }

  /** bumpTool re-renders the block a call shows in: its own, or its Task call's. */
  bumpTool(t, tool) {
    this.bumpBlock(t, 'tool', tool.parent || tool.id);
  }

  bumpBlock(t, kind, id) {
    for (const b of t.blocks) if (b.kind === kind && b.id === id) b.v++;
    this.touch(t.key);
  }

  openIn(t) {
    for (const b of t.blocks) {
      if (b.kind === 'interaction' && this.interactions.get(b.id)?.status === 'open') return true;
    }
    return false;
  }

  /** openInteractions lists the questions waiting for an answer. */
  openInteractions() {
    return [...this.interactions.values()].filter((i) => i.status === 'open');
  }

  /** status is the session's state for its header. */
  status() {
    if (this.openInteractions().length) return 'waiting';
    if (this.running) return 'running';
    const last = [...this.turns.values()].pop();
    return last && last.state !== 'running' ? last.state : 'idle';
  }

  /** totals adds up the usage of every turn (each turn reports its running total). */
  totals() {
    const sum = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, hasCost: false, turns: 0 };
    for (const t of this.turns.values()) {
      if (!t.usage) continue;
      sum.turns++;
      sum.input += t.usage.input_tokens || 0;
      sum.output += t.usage.output_tokens || 0;
      sum.cacheRead += t.usage.cache_read_tokens || 0;
      sum.cacheWrite += t.usage.cache_creation_tokens || 0;
      if (typeof t.usage.cost_usd === 'number') {
        sum.cost += t.usage.cost_usd;
        sum.hasCost = true;
      }
    }
    return sum;
  }
}

function endState(cancelled, stop) {
  if (cancelled || stop === 'cancelled') return 'cancelled';
  if (stop === 'error') return 'error';
  if (stop === 'max_turns' || stop === 'refusal') return 'stopped';
  return 'done';
}

function isEnded(t) {
  return t.state !== 'running' && t.state !== 'waiting';
}

/**
 * attachedFiles is what a prompt shows of its context_files: each file's
 * name and type (never its URL: the master's grant is in it).
 */
export function attachedFiles(list) {
  return (Array.isArray(list) ? list : []).map((f) => ({ name: String(f?.file_name || 'file'), type: String(f?.mime_type || '') }));
}

/**
 * promptFailure is what a failed prompt says: "Not delivered" when the
 * master refused it (it was never stored), "Not run" when it reached the
 * master and the session's client refused it, with what to do.
 */
export function promptFailure(p) {
  const e = p.error || {};
  // What the code means stands in for a missing message, never the code.
  const message = e.message || codeLine(e.code) || 'refused';
  if (!p.stored) return { lead: 'Not delivered', message, code: e.code || '', then: '' };
  const files = p.files?.length ? ', with its files attached again' : '';
  return { lead: 'Not run', message, code: e.code || '', then: `Send it again${files}.` };
}

/**
 * editSegments is a prompt's parts as the prompt box's segments, to edit
 * and send again: text, and each file as its chip (the picked file, or
 * the prompt's file reference, which names the same file).
 */
export function editSegments(parts) {
  const out = [];
  for (const x of parts || []) {
    const f = x.file;
    if (x.text !== undefined) out.push({ kind: 'text', text: x.text });
    else if (f?.path) {
      const file = { path: f.path, display_path: x.display || f.display_path || f.path };
      if (f.workspace_id) file.workspace_id = f.workspace_id;
      out.push({ kind: 'file', file });
    } else out.push({ kind: 'text', text: x.display || '' });
  }
  return out;
}
