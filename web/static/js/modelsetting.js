// The session's model and thinking effort, settings in the session's
// settings sheet, offered only where the session's agent declares models (its
// capability). The list comes from the machine (control.models.list,
// answered session.models from the provider's API); a list that fails is
// shown with its reason and a retry, never hidden. A pick sends
// control.session.settings (with the other settings in force: the message
// carries them all) and applies from the next turn; session.settings says
// what is in force, and the master keeps it with the session.

import { h, clear, settingRow } from './util.js';
import { message } from './conn.js';

/** EFFORT_LABELS name the thinking efforts. */
export const EFFORT_LABELS = { off: 'off', low: 'low', medium: 'medium', high: 'high' };

/**
 * settingsPayload is the control.session.settings payload that keeps every
 * setting in force in st but those in change (a key set to '' or null
 * goes back to its default).
 */
export function settingsPayload(st, change) {
  const out = {};
  if (st?.permission_timeout_set) out.permission_timeout_ms = st.permission_timeout_ms;
  if (st?.model) out.model = st.model;
  if (st?.effort) out.effort = st.effort;
  for (const [k, v] of Object.entries(change)) {
    if (v === '' || v === null || v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * pickBase is what a new pick builds on: the settings in force, with a
 * pick not yet confirmed by session.settings over them (a model picked
 * and then an effort before the answer came must keep that model).
 */
export function pickBase(settings, pending) {
  return { ...(settings || {}), ...(pending || {}) };
}

export class ModelSetting {
  constructor(view) {
    this.view = view;
    this.list = null; // session.models
    this.loading = false;
    this.error = '';
    this.pending = null; // {model, effort} asked for, until session.settings says it
    this.model = h('select', { id: 'model-select', onchange: () => this.change({ model: this.model.value, effort: '' }) });
    this.effort = h('select', { id: 'effort-select', onchange: () => this.change({ effort: this.effort.value }) });
    this.effortLabel = settingRow('Thinking', 'effort-select', this.effort, 'How much the model thinks before it answers, from the next turn on.');
    this.status = h('span', { class: 'model-status small', role: 'status' });
    this.retry = h('button', { type: 'button', class: 'btn small', text: 'Retry', hidden: true, onclick: () => this.load(true) });
    this.el = h('div', { class: 'model-setting', hidden: true },
      settingRow('Model', 'model-select', this.model, 'The model the agent runs, from the next turn on.'),
      this.effortLabel, this.status, this.retry);
  }

  /** load asks the machine for the model list (refresh: not its cache). */
  async load(refresh = false) {
    const v = this.view;
    if (this.loading) return;
    this.loading = true;
    this.error = '';
    this.draw();
    try {
      const ans = await v.conn.request(message('control.models.list', refresh ? { refresh: true } : {}, v.state.id), 40000);
      if (ans.type !== 'session.models') throw new Error(ans.payload?.message || 'no model list');
      this.list = ans.payload;
    } catch (ex) {
      this.error = ex.message || String(ex);
    } finally {
      this.loading = false;
      this.draw();
    }
  }

  draw() {
    const v = this.view;
    const a = v.adapter();
    const m = v.machine();
    this.el.hidden = !a?.models;
    if (this.el.hidden) return;
    if (!this.list && !this.loading && !this.error && m?.online && v.conn.state === 'open') {
      this.load();
      return;
    }
    const st = v.state.settings || {};
    if (this.pending && (st.model || '') === this.pending.model && (st.effort || '') === this.pending.effort) this.pending = null;
    const want = this.pending || { model: st.model || '', effort: st.effort || '' };
    this.status.textContent = this.loading ? 'Loading models…' : this.error ? `Models: ${this.error}` : '';
    this.status.classList.toggle('error', !!this.error);
    this.status.setAttribute('role', this.error ? 'alert' : 'status');
    this.retry.hidden = !this.error;
    const models = this.list?.models || [];
    const def = this.list?.default || '';
    const key = `${def}|${models.map((x) => x.id).join(',')}|${want.model}`;
    if (this.model.dataset.key !== key) {
      clear(this.model);
      this.model.appendChild(h('option', { value: '', text: def ? `${def} (default)` : 'default' }));
      // The default model is the first option already: listed once.
      for (const x of models) {
        if (x.id !== def) this.model.appendChild(h('option', { value: x.id, text: x.name && x.name !== x.id ? `${x.name} (${x.id})` : x.id }));
      }
      // A kept model the list no longer shows stays visible.
      if (want.model && want.model !== def && !models.some((x) => x.id === want.model)) this.model.appendChild(h('option', { value: want.model, text: want.model }));
      this.model.dataset.key = key;
    }
    // A session pinned to the default model shows it as the default.
    this.model.value = want.model === def ? '' : want.model;
    this.model.disabled = this.loading || !this.list;
    const info = models.find((x) => x.id === (want.model || def));
    const efforts = info?.efforts || [];
    this.effortLabel.hidden = !efforts.length;
    const ekey = `${efforts.join(',')}|${want.effort}`;
    if (this.effort.dataset.key !== ekey) {
      clear(this.effort);
      this.effort.appendChild(h('option', { value: '', text: 'default' }));
      for (const e of efforts) this.effort.appendChild(h('option', { value: e, text: EFFORT_LABELS[e] || e }));
      this.effort.dataset.key = ekey;
    }
    this.effort.value = want.effort;
  }

  change(change) {
    const v = this.view;
    const payload = settingsPayload(pickBase(v.state.settings, this.pending), change);
    this.pending = { model: payload.model || '', effort: payload.effort || '' };
    const sent = v.app.control('control.session.settings', payload, v.state.id, (err) => {
      this.pending = null;
      v.app.toast(`The model was not changed: ${err.message}`);
      v.render();
    });
    if (!sent) {
      this.pending = null;
      v.render();
      return;
    }
    v.app.announce(`From the next turn: ${payload.model || 'the default model'}${payload.effort ? `, thinking ${payload.effort}` : ''}.`);
    v.render();
  }
}
