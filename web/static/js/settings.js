// Prompt settings: the config_overrides a prompt can carry, offered only
// where the session's adapter declares it honours them (its capability's
// `settings`), since an adapter refuses a prompt with a setting it does not
// honour. output_format is not offered: the UI always streams.
import { h, clear } from './util.js';

const FIELDS = [
  { key: 'max_turns', label: 'Max turns', help: 'Stop after this many model round trips.' },
  { key: 'allowed_tools', label: 'Allow without asking', help: 'Permission rules, one per line, e.g. Bash(git diff:*)' },
  { key: 'denied_tools', label: 'Always refuse', help: 'Permission rules, one per line, e.g. Bash or Edit(secrets/**)' },
  { key: 'json_schema', label: 'Answer as JSON (schema)', help: 'A JSON Schema object; the answer is checked against it.' },
];

/** rules splits a text area into permission rules, one per line. */
function rules(text) {
  return text.split('\n').map((s) => s.trim()).filter(Boolean);
}

export class PromptSettings {
  constructor() {
    this.inputs = {};
    this.body = h('div', { class: 'settings-fields stack' });
    this.summary = h('summary', { text: 'Prompt settings' });
    this.el = h('details', { class: 'prompt-settings small', hidden: true }, this.summary, this.body);
    this.offered = '';
  }

  /** update shows the fields of the settings the adapter declares. */
  update(declared) {
    const offered = FIELDS.filter((f) => declared?.includes(f.key));
    const sig = offered.map((f) => f.key).join(',');
    if (sig === this.offered) return;
    this.offered = sig;
    const old = this.inputs;
    this.inputs = {};
    clear(this.body);
    for (const f of offered) {
      const id = `setting-${f.key}`;
      const input = f.key === 'max_turns'
        ? h('input', { id, type: 'number', min: '1', max: '10000', inputmode: 'numeric' })
        : h('textarea', { id, rows: f.key === 'json_schema' ? '4' : '2', spellcheck: 'false' });
      input.value = old[f.key]?.value || '';
      input.addEventListener('input', () => this.count());
      this.inputs[f.key] = input;
      this.body.appendChild(h('div', { class: 'setting' },
        h('label', { for: id, text: f.label }), input, h('p', { class: 'muted small', text: f.help })));
    }
    this.el.hidden = offered.length === 0;
    this.count();
  }

  count() {
    const n = Object.values(this.inputs).filter((i) => i.value.trim()).length;
    this.summary.textContent = n ? `Prompt settings (${n} set)` : 'Prompt settings';
  }

  /**
   * overrides reads the fields: {value} (the config_overrides object, or
   * null when nothing is set) or {error} naming the field that is wrong.
   */
  overrides() {
    const o = {};
    const v = (k) => this.inputs[k]?.value.trim() || '';
    if (v('max_turns')) {
      const n = Number(v('max_turns'));
      if (!Number.isInteger(n) || n < 1 || n > 10000) return { error: 'Max turns must be a whole number from 1 to 10000.' };
      o.max_turns = n;
    }
    if (v('allowed_tools')) o.allowed_tools = rules(v('allowed_tools'));
    if (v('denied_tools')) o.denied_tools = rules(v('denied_tools'));
    if (v('json_schema')) {
      let schema;
      try {
        schema = JSON.parse(v('json_schema'));
      } catch {
        return { error: 'The JSON schema is not valid JSON.' };
      }
      if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return { error: 'The JSON schema must be a JSON object.' };
      o.json_schema = schema;
    }
    return { value: Object.keys(o).length ? o : null };
  }
}
