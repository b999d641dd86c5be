// An agent's question (agent.interaction.request): a permission with the
// diff the call would make, a single or multiple choice, or free text, with
// its timeout counting down. Answering sends control.interaction.response;
// the first answer from any UI wins and every UI then sees
// agent.interaction.resolved.

import { h, formatDuration, shorten } from './util.js';
import { renderDiff } from './diff.js';
import { renderMarkdown } from './markdown.js';
import { timeoutFate } from './timeoutsetting.js';
import { todoLine } from './todos.js';

const OUTCOME = { answered: 'Answered', timeout: 'Timed out', cancelled: 'Closed: the turn ended' };

const KIND = {
  permission: 'Permission',
  single_select: 'Question',
  multi_select: 'Question',
  text_input: 'Question',
};

/** describeAnswer says what an interaction was answered with. */
function describeAnswer(it) {
  const r = it.resolved || {};
  const opts = it.req.options || [];
  const label = (v) => opts.find((o) => o.value === v)?.label || v;
  const vals = r.selected_value === undefined ? [] : [].concat(r.selected_value);
  const parts = vals.filter((v) => v !== '').map(label);
  if (r.text_input) parts.push(`“${shorten(r.text_input, 80)}”`);
  if (r.note) parts.push(`note “${shorten(r.note, 80)}”`);
  return parts.join(', ');
}

/** toolSummary names what a permission is for: the file, command or pattern. */
export function toolSummary(input) {
  const i = input || {};
  if (Array.isArray(i.todos)) return todoLine(i); // TodoWrite: where the list stands, not its JSON
  return i.file_path || i.notebook_path || i.path || i.command || i.pattern || i.url || i.description || '';
}

/** MAX_NOTE bounds a denial's note (protocol.MaxDenyNote). */
export const MAX_NOTE = 2000;

/**
 * renderInteraction returns the card of interaction it. respond(it, value,
 * text, note) sends the answer. With denyNote (the session's agent carries
 * a note with a denial: its capability's deny_note) a permission card has
 * a note field that goes with Deny.
 */
export function renderInteraction(it, respond, denyNote = false) {
  const req = it.req;
  const titleID = `q-${cssID(it.id)}`;
  if (it.status !== 'open') {
    let answer = it.status === 'answered' ? ` — ${describeAnswer(it)}` : '';
    // A timeout applied an answer (the default, or deny): say which.
    if (it.status === 'timeout') answer = ` → ${describeAnswer(it) || 'no answer (denied)'}`;
    return h('div', { class: `interaction settled ${it.status}`, role: 'group', 'aria-label': req.title },
      h('span', { class: 'badge', text: OUTCOME[it.status] || it.status }), ' ',
      h('span', { class: 'q-title', text: req.title }),
      answer ? h('span', { class: 'q-answer', text: answer }) : null);
  }
  const card = h('div', { class: `interaction open kind-${req.kind}`, role: 'group', 'aria-labelledby': titleID, dataset: { interaction: it.id } });
  card.appendChild(h('div', { class: 'q-head' },
    h('span', { class: 'badge attention', text: KIND[req.kind] || 'Question' }),
    h('h2', { class: 'q-title', id: titleID, text: req.title })));
  if (req.message) {
    const msg = h('div', { class: 'q-message md' });
    renderMarkdown(msg, req.message);
    card.appendChild(msg);
  }
  if (req.kind === 'permission' && req.tool_name) {
    const what = toolSummary(req.tool_input);
    card.appendChild(h('p', { class: 'q-tool' }, h('code', { text: req.tool_name }), what ? ` ${shorten(what, 200)}` : ''));
  }
  if (req.diff) card.appendChild(renderDiff(req.diff));
  card.appendChild(timeoutLine(it));
  const opts = req.options || [];
  const send = (value, text, note) => {
    if (it.sending) return;
    respond(it, value, text, note);
  };
  if (req.kind === 'permission' || (req.kind === 'single_select' && opts.length && opts.length <= 4 && !opts.some((o) => o.description))) {
    // The note survives a redraw of the card (the countdown, a resend).
    const noteID = `${titleID}-note`;
    const note = req.kind === 'permission' && denyNote && opts.some((o) => o.value === 'deny')
      ? h('input', { type: 'text', id: noteID, class: 'q-note', maxlength: String(MAX_NOTE), placeholder: 'e.g. use git mv instead', disabled: it.sending,
        oninput: (e) => { it.note = e.target.value; },
        onkeydown: (e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            send('deny', undefined, it.note || '');
          }
        } })
      : null;
    if (note) {
      note.value = it.note || '';
      card.appendChild(h('div', { class: 'q-note-row' },
        h('label', { for: noteID, class: 'small muted', text: 'Note with a denial (the agent reads it)' }), note));
    }
    // Only the default (what a timeout answers) is marked: nothing else is
    // presented as the answer the question gets on its own.
    const row = h('div', { class: 'q-actions' });
    for (const o of opts) {
      const deny = o.value === 'deny';
      row.appendChild(h('button', {
        type: 'button', class: `btn ${deny ? 'danger' : o.value === req.default_value ? 'primary' : ''}`,
        disabled: it.sending, title: o.description || false, dataset: { value: o.value }, text: o.label,
        onclick: () => send(o.value, undefined, deny && note ? (it.note || '') : undefined),
      }));
    }
    card.appendChild(row);
  } else if (req.kind === 'single_select' || req.kind === 'multi_select') {
    const multi = req.kind === 'multi_select';
    const form = h('form', { class: 'q-form' });
    const fs = h('fieldset', {}, h('legend', { class: 'sr-only', text: req.title }));
    const defaults = new Set(String(req.default_value || '').split(',').map((s) => s.trim()).filter(Boolean));
    opts.forEach((o, i) => {
      const id = `${titleID}-o${i}`;
      fs.appendChild(h('div', { class: 'q-option' },
        h('input', { type: multi ? 'checkbox' : 'radio', name: titleID, id, value: o.value, checked: defaults.has(o.value) }),
        h('label', { for: id }, h('span', { text: o.label }), o.description ? h('span', { class: 'muted small', text: ` ${o.description}` }) : null)));
    });
    form.appendChild(fs);
    const err = h('p', { class: 'q-error', role: 'alert' });
    form.appendChild(err);
    form.appendChild(h('div', { class: 'q-actions' }, h('button', { type: 'submit', class: 'btn primary', disabled: it.sending, text: 'Answer' })));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const picked = [...form.querySelectorAll('input:checked')].map((x) => x.value);
      if (!multi && picked.length !== 1) {
        err.textContent = 'Choose one option.';
        return;
      }
      send(multi ? picked : picked[0]);
    });
    card.appendChild(form);
  } else {
    const form = h('form', { class: 'q-form' });
    const id = `${titleID}-text`;
    const ta = h('textarea', { id, rows: '3', 'aria-labelledby': titleID });
    ta.value = req.default_value || '';
    form.appendChild(ta);
    form.appendChild(h('div', { class: 'q-actions' }, h('button', { type: 'submit', class: 'btn primary', disabled: it.sending, text: 'Answer' })));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      send([], ta.value);
    });
    ta.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    card.appendChild(form);
  }
  if (it.error) card.appendChild(h('p', { class: 'q-error', role: 'alert', text: it.error }));
  return card;
}

function cssID(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, '_');
}

/**
 * timeoutLine shows how long the agent waits, counting down to the
 * request's expires_at (the master's deadline, so a reload or another UI
 * counts to the same moment). A question from a master that sends no
 * expires_at counts from when this page saw it, or, replayed, says only
 * the timeout.
 */
function timeoutLine(it) {
  const ms = it.req.timeout_ms || 0;
  const el = h('p', { class: 'q-timeout muted small', role: 'timer', 'aria-live': 'off' });
  if (!ms) {
    el.textContent = 'No time limit.';
    return el;
  }
  const fate = timeoutFate(it.req);
  let deadline = Date.parse(it.req.expires_at || '');
  if (!isFinite(deadline)) {
    if (!it.live) {
      el.textContent = `Times out ${formatDuration(ms)} after it was asked; then ${fate}.`;
      return el;
    }
    deadline = it.seenAt + ms;
  }
  el.dataset.deadline = String(deadline);
  const tick = () => {
    if (!el.isConnected && el.dataset.started) return;
    el.dataset.started = '1';
    const left = deadline - Date.now();
    el.dataset.left = String(Math.max(0, Math.round(left / 1000)));
    el.textContent = left > 0 ? `Answer within ${formatDuration(left)}, or ${fate}.` : `Time is up: ${fate} as soon as the machine hears it.`;
    el.classList.toggle('urgent', left < 30000);
    if (left > 0) setTimeout(tick, 1000 - (Date.now() % 1000) + 5);
  };
  tick();
  return el;
}
