// The conversation of one session, rendered from its SessionState: the
// user's prompts (picked files as chips), each turn with its streamed
// Markdown, compact tool calls (Write and Edit with their diff), questions,
// artifacts, errors and usage, and notes (mode switches, compaction).
//
// Rendering is incremental: each turn keeps one element per block and only
// blocks whose version changed are rebuilt, at most once per frame, so a
// long streamed answer re-renders only its last text block.

import { h, clear, formatBytes, formatCost, formatTokens, shorten, shortenPath, toolPath } from './util.js';
import { imageDataURL } from './attach.js';
import { renderMarkdown } from './markdown.js';
import { renderDiff, diffStats, diffLayout } from './diff.js';
import { renderInteraction, toolSummary } from './interaction.js';
import { TURN_LABELS, promptFailure } from './session.js';
import { watchChanged } from './artifactmarker.js';
import { TOOL_CODES, toolErrorText, toolErrorCode, namedToolOutput, errorNote } from './codes.js';

const TOOL_STATUS = { running: 'running', ok: 'done', error: 'failed', denied: 'denied', cancelled: 'cancelled', unfinished: 'unfinished' };
const OUTPUT_LINES = 12;

/** promptParts renders a prompt's parts: text, and files as chips. */
export function promptParts(parts) {
  return parts.map((p) => (p.text !== undefined
    ? document.createTextNode(p.text)
    : h('span', { class: 'chip file', title: p.file?.path || p.display }, h('span', { class: 'sr-only', text: 'file ' }), p.display)));
}

const RUN_NAMES = { setup: ['Setup', '.ferry/setup'], test: ['Tests', '.ferry/test'] };
const RUN_STATES = { running: 'running…', ok: 'done', failed: 'failed', none: 'no script' };

/**
 * runOutput renders a worktree script's run (item: a SessionState output
 * item): what ran, its state and exit status, and its output's tail.
 */
export function runOutput(item, open) {
  const [name, file] = RUN_NAMES[item.what] || [item.what, ''];
  let st = RUN_STATES[item.state] || item.state;
  if (item.what === 'test' && item.state === 'ok') st = 'passed';
  const exit = item.exitCode !== null && item.state !== 'running' ? ` (exit ${item.exitCode})` : '';
  return h('details', { class: `run-output ${item.state}`, open, dataset: { what: item.what, state: item.state } },
    h('summary', {},
      item.state === 'running' ? h('span', { class: 'spinner', 'aria-hidden': 'true' }) : null,
      h('span', { class: 'run-name', text: `${name} ` }), h('code', { text: file }),
      h('span', { class: `run-state ${item.state}`, text: `: ${st}${exit}` })),
    item.output ? h('pre', { class: 'run-text', tabindex: '0', 'aria-label': `${name} output`, text: item.output }) : h('p', { class: 'muted small', text: item.state === 'running' ? 'No output yet.' : 'No output.' }));
}

/** artifactCard renders an artifact with its download link. */
export function artifactCard(a, ctx) {
  const link = ctx.artifactLink(a.artifact_id);
  const anchor = h('a', {
    class: 'btn download', href: link?.url || `#download-${a.artifact_id}`, download: a.file_name,
    dataset: { artifact: a.artifact_id }, 'aria-label': `Download ${a.file_name}`, text: 'Download',
    onclick: (e) => ctx.download(e, a),
  });
  const card = h('div', { class: 'artifact', dataset: { artifactId: a.artifact_id } },
    h('span', { class: 'file-icon', 'aria-hidden': 'true', text: '⬇' }),
    h('span', { class: 'artifact-info' },
      h('span', { class: 'artifact-name', text: a.file_name, title: a.path }),
      h('span', { class: 'artifact-meta muted small', text: [formatBytes(a.size), a.mime_type || 'unknown type', a.path !== a.file_name ? a.path : ''].filter(Boolean).join(' · ') })),
    anchor);
  watchChanged(card, anchor);
  return card;
}

function toolIcon(status) {
  switch (status) {
    case 'running': return h('span', { class: 'spinner', 'aria-hidden': 'true' });
    case 'ok': return h('span', { class: 'ok', 'aria-hidden': 'true', text: '✓' });
    case 'denied': return h('span', { class: 'warn', 'aria-hidden': 'true', text: '⊘' });
    case 'cancelled': return h('span', { class: 'muted', 'aria-hidden': 'true', text: '■' });
    default: return h('span', { class: 'bad', 'aria-hidden': 'true', text: '✕' });
  }
}

function renderOutput(text) {
  const lines = text.split('\n');
  const pre = h('pre', { class: 'tool-output' });
  if (lines.length <= OUTPUT_LINES + 2) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = lines.slice(0, OUTPUT_LINES).join('\n');
  const more = h('button', {
    type: 'button', class: 'link small', text: `Show all ${lines.length} lines`,
    onclick: () => {
      pre.textContent = text;
      more.remove();
    },
  });
  return h('div', {}, pre, more);
}

/**
 * toolImages shows the images a tool answered (agent.tool.finished
 * images: a Read of a PNG) inline, narrow; a click opens one full size.
 * Only PNG, JPEG, GIF and WebP in valid base64 are shown (imageDataURL),
 * anything else is left out.
 */
function toolImages(tool, what) {
  const urls = (Array.isArray(tool.images) ? tool.images : []).map(imageDataURL).filter(Boolean);
  if (!urls.length) return null;
  const label = (i) => `Image ${urls.length > 1 ? `${i + 1} ` : ''}from ${tool.name}${what ? ` ${shorten(what, 80)}` : ''}`;
  return h('div', { class: 'tool-images' }, urls.map((url, i) => h('button', {
    type: 'button', class: 'tool-image', 'aria-label': `${label(i)}: open full size`,
    onclick: () => openImage(url, label(i)),
  }, h('img', { src: url, alt: label(i), loading: 'lazy', decoding: 'async' }))));
}

/** openImage shows one image full size in a dialog. */
function openImage(url, label) {
  const dlg = h('dialog', { class: 'dialog image-dialog', 'aria-label': label },
    h('div', { class: 'dialog-head' }, h('h2', { text: label }),
      h('button', { type: 'button', class: 'btn', text: 'Close', onclick: () => dlg.close() })),
    h('div', { class: 'image-full' }, h('img', { src: url, alt: label })));
  dlg.addEventListener('close', () => dlg.remove());
  dlg.addEventListener('click', (e) => {
    if (e.target === dlg) dlg.close(); // the backdrop
  });
  document.body.appendChild(dlg);
  dlg.showModal();
}

/**
 * renderSteps renders a Task call's sub-agent steps (its calls, which name
 * the Task call as parent_tool_use_id), folded under the call with their
 * count; open says whether the fold is open, openSteps which steps are.
 */
function renderSteps(tool, t, ctx, open, openSteps) {
  const steps = tool.steps.map((id) => t.tools.get(id)).filter(Boolean);
  const running = steps.filter((s) => s.status === 'running').length;
  const label = `${steps.length} step${steps.length === 1 ? '' : 's'}${running ? ` · ${running} running` : ''}`;
  return h('details', { class: 'task-steps', open },
    h('summary', { 'aria-label': `Sub-agent: ${label}` }, h('span', { class: 'task-steps-label small', text: label })),
    h('ol', { class: 'task-step-list', 'aria-label': 'Sub-agent steps' }, steps.map((s) => {
      const box = renderTool(s, ctx, t);
      if (openSteps.has(s.id)) box.querySelector('details').open = true;
      return h('li', {}, box);
    })));
}

/** stepsOpenByDefault: a phone folds a sub-agent's steps, a wide screen shows them. */
function stepsOpenByDefault() {
  return typeof window.matchMedia === 'function' && window.matchMedia('(min-width: 900px)').matches;
}

function renderTool(tool, ctx, t = null, fold = { open: stepsOpenByDefault(), steps: new Set() }) {
  const what = toolSummary(tool.input);
  const path = toolPath(tool.input, ctx?.workspacePath?.());
  const stats = tool.diff ? diffStats(tool.diff) : null;
  const summary = h('summary', {},
    toolIcon(tool.status),
    h('span', { class: 'tool-name', text: tool.name }),
    // A path is shown relative to the workspace and cut from the left (the
    // CSS too), so a narrow screen still shows the file name.
    path ? h('span', { class: 'tool-what tool-path', title: what }, h('bdi', { text: shortenPath(path, 120) }))
      : what ? h('span', { class: 'tool-what', text: shorten(what, 120) }) : null,
    stats ? h('span', { class: 'diff-stat small' }, h('span', { class: 'plus', text: `+${stats.add}` }), ' ', h('span', { class: 'minus', text: `−${stats.del}` })) : null,
    h('span', { class: `tool-status small s-${tool.status}`, text: tool.statusLine && tool.status === 'running' ? shorten(tool.statusLine, 40) : (tool.errorCode && TOOL_CODES[tool.errorCode]?.[0]) || TOOL_STATUS[tool.status] || tool.status }));
  const body = h('div', { class: 'tool-body' });
  const input = JSON.stringify(tool.input, null, 2);
  if (input && input !== '{}') body.appendChild(h('div', {}, h('div', { class: 'muted small', text: 'Input' }), h('pre', { class: 'tool-input', text: input })));
  if (tool.output) body.appendChild(h('div', {}, h('div', { class: 'muted small', text: tool.status === 'running' ? 'Output so far' : 'Output' }), renderOutput(tool.errorCode ? namedToolOutput(tool.output) : tool.output)));
  if (tool.errorCode) body.appendChild(h('p', { class: 'small', title: toolErrorCode(tool.errorCode), text: toolErrorText(tool.errorCode) }));
  const details = h('details', { class: 'tool-details' }, summary, body);
  const box = h('div', { class: `tool status-${tool.status}`, dataset: { tool: tool.name, toolId: tool.id } }, details);
  if (t && tool.steps?.length) box.appendChild(renderSteps(tool, t, ctx, fold.open, fold.steps));
  const imgs = toolImages(tool, what);
  if (imgs) box.appendChild(imgs);
  if (tool.diff) box.appendChild(renderDiff(tool.diff));
  const undo = ctx?.toolControls?.(tool);
  if (undo) box.appendChild(undo);
  return box;
}

function usageLine(u) {
  if (!u) return null;
  const bits = [`${formatTokens(u.input_tokens)} in`, `${formatTokens(u.output_tokens)} out`];
  if (u.cache_read_tokens) bits.push(`${formatTokens(u.cache_read_tokens)} cached`);
  if (typeof u.cost_usd === 'number') bits.push(formatCost(u.cost_usd));
  return h('div', { class: 'usage muted small', title: u.model || '' }, bits.join(' · '), u.model ? ` · ${u.model}` : '');
}

function stateBadge(state) {
  return h('span', { class: `state-badge st-${state}` },
    state === 'running' ? h('span', { class: 'spinner', 'aria-hidden': 'true' }) : null,
    TURN_LABELS[state] || state);
}

export class TranscriptView {
  /**
   * ctx: respond(it, value, text), artifactLink(id), download(event,
   * artifact), onTurnEnded(turn), toolControls(tool) and turnControls(turn)
   * (undo and rewind, history.js), plainText() (the agent's text is a
   * command's output, shown as it is: text_format plain) and machineName()
   * (named by a restart's error line).
   */
  constructor(state, ctx) {
    this.state = state;
    this.ctx = ctx;
    this.el = h('div', { class: 'transcript', role: 'log', 'aria-live': 'off', 'aria-label': 'Conversation', tabindex: '0' });
    this.list = h('ol', { class: 'items' });
    this.empty = h('div', { class: 'empty muted' }, h('p', { text: 'Nothing here yet.' }), h('p', { text: 'Type a prompt below. @ picks a file, / lists commands.' }));
    this.el.append(this.empty, this.list);
    this.nodes = new Map(); // item key → {li, blocks: [{el, v}]}
    this.rendered = 0; // items rendered so far
  }

  /** reset forgets every element: the state was replaced (snapshot). */
  reset() {
    clear(this.list);
    this.nodes.clear();
    this.rendered = 0;
  }

  nearBottom() {
    const e = this.el;
    return e.scrollHeight - e.scrollTop - e.clientHeight < 80;
  }

  scrollToEnd() {
    this.el.scrollTop = this.el.scrollHeight;
  }

  /** update renders new items and the items changed since the last update. */
  update(all = false) {
    const stick = this.nearBottom();
    const s = this.state;
    const dirty = s.takeDirty();
    for (; this.rendered < s.items.length; this.rendered++) {
      const item = s.items[this.rendered];
      const li = h('li', { class: `item ${item.kind}`, dataset: { key: item.key } });
      this.list.appendChild(li);
      this.nodes.set(item.key, { li, blocks: [], item });
      dirty.add(item.key);
    }
    for (const [key, node] of this.nodes) {
      if (all || dirty.has(key)) this.renderItem(node, all);
    }
    this.empty.hidden = s.items.length > 0;
    if (stick) this.scrollToEnd();
  }

  renderItem(node, all) {
    const { item } = node;
    const s = this.state;
    if (item.kind === 'note') {
      if (!node.li.firstChild) node.li.appendChild(h('div', { class: `note ${item.level}`, role: item.level === 'error' ? 'alert' : null, text: item.text }));
      return;
    }
    if (item.kind === 'output') {
      // A worktree's setup or test run: folded, open while it runs or
      // when it failed, and kept as the user left it across updates.
      const was = node.li.querySelector('details');
      const open = was ? was.open : item.state === 'running' || item.state === 'failed';
      clear(node.li);
      node.li.appendChild(runOutput(item, open));
      return;
    }
    if (item.kind === 'prompt') {
      const p = item.ref;
      if (!p) return;
      clear(node.li);
      const body = h('div', { class: 'bubble' }, promptParts(p.parts || []));
      const art = h('article', { class: `msg user ${p.status}`, 'aria-label': 'You' }, body);
      if (p.files?.length) {
        art.appendChild(h('ul', { class: 'prompt-files', 'aria-label': 'Attached files' },
          p.files.map((f) => h('li', { class: 'prompt-file small', title: f.type || '' }, f.name))));
      }
      if (p.inputType && p.inputType !== 'text') art.appendChild(h('div', { class: 'muted small', text: p.inputType.replace('_', ' ') }));
      if (p.status === 'sending') art.appendChild(h('div', { class: 'muted small', text: 'Sending…' }));
      if (p.status === 'failed') {
        const f = promptFailure(p);
        const again = f.then && this.ctx.editAgain
          ? h('button', { type: 'button', class: 'link small', text: 'Edit again', onclick: () => this.ctx.editAgain(p) })
          : null;
        // The code is for support, in the title; the text says what it means.
        art.appendChild(h('div', { class: 'prompt-error small', role: 'alert', title: f.code || false },
          `${f.lead}: ${f.message}${f.then && !/[.!?…]$/.test(f.message) ? '.' : ''}`, f.then ? ` ${f.then}` : null, again ? ' ' : null, again));
      }
      node.li.appendChild(art);
      return;
    }
    const t = item.ref;
    if (!t) return;
    if (!node.art) {
      node.head = h('div', { class: 'turn-head' });
      node.body = h('div', { class: 'turn-body' });
      node.foot = h('div', { class: 'turn-foot' });
      node.art = h('article', { class: 'msg agent', 'aria-label': 'Agent' }, node.head, node.body, node.foot);
      node.li.appendChild(node.art);
    }
    node.art.dataset.state = t.state;
    node.art.classList.toggle('rewound', !!t.rewound);
    node.art.setAttribute('aria-busy', t.state === 'running' ? 'true' : 'false');
    clear(node.head).append(stateBadge(t.state), t.mode && t.mode !== 'default' ? h('span', { class: 'badge', text: `${t.mode} mode` }) : '');
    t.blocks.forEach((b, i) => {
      let slot = node.blocks[i];
      if (!slot) {
        slot = { el: h('div', { class: `block k-${b.kind}` }), v: -1 };
        node.blocks[i] = slot;
        node.body.appendChild(slot.el);
      }
      if (!all && slot.v === b.v && b.kind !== 'interaction') return;
      slot.v = b.v;
      this.renderBlock(slot.el, b, t);
    });
    clear(node.foot);
    const u = usageLine(t.usage);
    if (u) node.foot.appendChild(u);
    if (t.result !== undefined) node.foot.appendChild(h('details', { class: 'result' }, h('summary', { text: 'Structured result' }), h('pre', { text: JSON.stringify(t.result, null, 2) })));
    const rw = this.ctx.turnControls?.(t);
    if (rw) node.foot.appendChild(rw);
  }

  renderBlock(el, b, t) {
    const s = this.state;
    switch (b.kind) {
      case 'text':
        // A command's output (a script agent: text_format plain) keeps its
        // lines and spaces; Markdown would join single lines.
        if (this.ctx.plainText?.()) {
          el.classList.remove('md');
          clear(el).appendChild(h('pre', { class: 'plain-output', text: b.text }));
        } else {
          el.classList.add('md');
          renderMarkdown(el, b.text);
        }
        break;
      case 'thinking':
        clear(el).appendChild(h('details', { class: 'thinking' }, h('summary', { text: 'Thinking' }), h('div', { class: 'thinking-text', text: b.text })));
        break;
      case 'tool': {
        const tool = t.tools.get(b.id);
        const open = el.querySelector('details.tool-details')?.open;
        // A Task call's fold and the steps open in it stay as the user left them.
        const fold = el.querySelector('details.task-steps');
        const steps = new Set([...el.querySelectorAll('.task-step-list details.tool-details[open]')].map((d) => d.closest('.tool')?.dataset.toolId));
        clear(el);
        if (tool) {
          const box = renderTool(tool, this.ctx, t, { open: fold ? fold.open : stepsOpenByDefault(), steps });
          if (open) box.querySelector('details').open = true;
          el.appendChild(box);
        }
        break;
      }
      case 'interaction': {
        const it = s.interactions.get(b.id);
        if (!it) break;
        const key = `${it.status}|${it.sending}|${it.error}|${diffLayout()}`;
        if (el.dataset.key === key) break; // keep the user's half-filled form
        el.dataset.key = key;
        clear(el).appendChild(renderInteraction(it, this.ctx.respond, !!this.ctx.denyNote?.()));
        break;
      }
      case 'artifact': {
        const a = s.artifacts.get(b.id);
        if (a) clear(el).appendChild(artifactCard(a, this.ctx));
        break;
      }
      case 'error':
        clear(el).appendChild(h('div', { class: 'error-line', role: 'alert' },
          h('strong', { text: 'Error: ' }), h('span', { title: b.error.code, text: errorNote(b.error, { machine: this.ctx.machineName?.() }) }),
          b.error.retryable ? h('span', { class: 'muted small', text: ' (may work if you try again)' }) : null));
        break;
      default:
        break;
    }
  }
}
