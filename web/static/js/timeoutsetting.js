// The session's permission timeout, in the session's settings sheet: how
// long an agent's question waits for an answer before it times out (it
// then takes its default_value: a permission's is deny, or none). It
// sends control.session.settings; the client's session.settings (or
// session.opened) says what is in force, and the master keeps it with the
// session. The message carries all the session's settings, so the model
// and effort in force go with it (settingsPayload).

import { h, clear, settingRow, shorten } from './util.js';
import { settingsPayload } from './modelsetting.js';

const CHOICES = [60000, 300000, 600000, 1800000, 3600000, 0];

/**
 * timeoutAnswer is the answer a timeout applies to an interaction request,
 * exactly as the master settles it (protocol InteractionRequest
 * TimeoutAnswer): its default_value, as { values, text }, or null when it
 * has none (no answer, which the agent takes as a denial). The decoder
 * refuses a default a timeout would not apply, so this is the default it
 * advertises.
 */
export function timeoutAnswer(req) {
  const def = req.default_value || '';
  if (!def) return null;
  const has = (v) => (req.options || []).some((o) => o.value === v);
  switch (req.kind) {
    case 'permission':
      return def === 'deny' && has(def) ? { values: [def], text: '' } : null;
    case 'single_select':
      return has(def) ? { values: [def], text: '' } : null;
    case 'multi_select': {
      const vals = def.split(',').map((v) => v.trim()).filter(Boolean);
      return vals.length && vals.every(has) ? { values: vals, text: '' } : null;
    }
    case 'text_input':
      return { values: [], text: def };
    default:
      return null;
  }
}

/** timeoutFate says what a timeout will answer the question (timeoutAnswer). */
export function timeoutFate(req) {
  if (req.kind === 'permission') return 'it is denied'; // its default is deny, or no answer: a denial
  const ans = timeoutAnswer(req);
  if (!ans) return 'it goes unanswered, which the agent takes as a denial';
  if (req.kind === 'text_input') return `it is answered “${shorten(ans.text, 60)}”`;
  const label = (v) => (req.options || []).find((o) => o.value === v)?.label || v;
  return `it takes ${ans.values.map((v) => `“${label(v)}”`).join(', ')}`;
}

/** timeoutLabel says a timeout briefly: 5 min, 1 h, 90 s, never. */
export function timeoutLabel(ms) {
  if (!ms) return 'never';
  if (ms % 3600000 === 0) return `${ms / 3600000} h`;
  if (ms % 60000 === 0) return `${ms / 60000} min`;
  return `${Math.round(ms / 100) / 10} s`;
}

export class TimeoutSetting {
  constructor(view) {
    this.view = view;
    this.pending = null; // the value asked for, until session.settings says it
    this.select = h('select', { id: 'timeout-select', onchange: () => this.change(this.select.value) });
    this.el = settingRow('Ask timeout', 'timeout-select', this.select,
      'How long a question of the agent waits for you. Then a permission is denied; any other question takes its default.');
  }

  draw() {
    const st = this.view.state.settings;
    if (this.pending !== null && st && (this.pending === 'default' ? !st.permission_timeout_set : st.permission_timeout_set && String(st.permission_timeout_ms) === this.pending)) {
      this.pending = null;
    }
    const current = !st ? 'default' : st.permission_timeout_set ? String(st.permission_timeout_ms) : 'default';
    const values = CHOICES.map(String);
    if (current !== 'default' && !values.includes(current)) values.push(current);
    const key = `${values.join(',')}|${st && !st.permission_timeout_set ? st.permission_timeout_ms : ''}`;
    if (this.select.dataset.key !== key) {
      clear(this.select);
      // The value first: a narrow (phone) menu shows the start of it.
      const def = st && !st.permission_timeout_set ? `${timeoutLabel(st.permission_timeout_ms)} (default)` : 'default';
      this.select.appendChild(h('option', { value: 'default', text: def }));
      for (const v of values) this.select.appendChild(h('option', { value: v, text: timeoutLabel(Number(v)) }));
      this.select.dataset.key = key;
    }
    this.select.value = this.pending ?? current;
  }

  change(value) {
    const v = this.view;
    // The message carries every setting: keep the model and effort.
    const payload = settingsPayload(v.state.settings, { permission_timeout_ms: value === 'default' ? null : Number(value) });
    this.pending = value;
    const sent = v.app.control('control.session.settings', payload, v.state.id, (err) => {
      this.pending = null;
      v.app.toast(`The timeout was not changed: ${err.message}`);
      v.render();
    });
    if (!sent) {
      this.pending = null;
      v.render();
      return;
    }
    v.app.announce(value === 'default' ? "Questions time out after the machine's default." : `Questions time out after ${timeoutLabel(Number(value))}.`);
  }
}
