// Unit checks of the UI's pure modules under Node (no browser), run by
// web/units_test.go: the prompt parser against the Go one, and the resume
// rules of the session state.

import fs from 'node:fs/promises';
import assert from 'node:assert/strict';
import { parsePrompt } from '../static/js/fileref.js';
import { SessionState } from '../static/js/session.js';

let failed = 0;
let passed = 0;

function check(name, fn) {
  try {
    fn();
    passed++;
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}

// The prompt parser agrees with protocol/fileref on every vector.
const vectors = JSON.parse(await fs.readFile(process.argv[2], 'utf8'));
let mismatches = 0;
for (const v of vectors) {
  const got = parsePrompt(v.text, v.refs || []).map((p) => (p.text !== undefined ? { text: p.text } : { ref_id: p.refId, display: p.display }));
  const want = (v.parts || []).map((p) => (p.text !== undefined ? { text: p.text } : { ref_id: p.ref_id, display: p.display }));
  try {
    assert.deepEqual(got, want);
  } catch {
    mismatches++;
    if (mismatches <= 3) console.log(`parser mismatch on ${JSON.stringify(v.text)}:\n  got  ${JSON.stringify(got)}\n  want ${JSON.stringify(want)}`);
  }
}
check(`the parser agrees with protocol/fileref on ${vectors.length} prompts`, () => assert.equal(mismatches, 0));

check('a snapshot prompt shows its tokens as chips (anyRef)', () => {
  const parts = parsePrompt('see \\<@file:x|y> and <@file:ref_3|src/a.go>', [], { anyRef: true });
  assert.deepEqual(parts, [{ text: 'see <@file:x|y> and ' }, { file: null, refId: 'ref_3', display: 'src/a.go' }]);
});

const info = { id: 's1', machine_id: 'm', workspace_id: 'w', adapter: 'builtin', mode: 'default', state: 'idle', epoch: 'e1', last_seq: 0 };
const ev = (seq, type, payload, extra = {}) => ({ type, message_id: `m${seq}`, session_id: 's1', seq, epoch: 'e1', payload, ...extra });

function started() {
  const s = new SessionState(info);
  s.onSubscribed({ recovered: true, epoch: 'e1', from_seq: 1, last_seq: 0 });
  assert.equal(s.accept(ev(1, 'control.prompt.request', { prompt_text: 'fix <@file:ref_0|a.go>', file_references: [{ ref_id: 'ref_0', path: 'a.go', name: 'a.go', workspace_relative_path: 'a.go' }] })), 'ok');
  assert.equal(s.accept(ev(2, 'agent.turn.started', { turn_id: 't1', input_type: 'text', mode: 'default' }, { parent_id: 'm1' })), 'ok');
  assert.equal(s.accept(ev(3, 'agent.text.delta', { turn_id: 't1', delta: 'Hel' })), 'ok');
  return s;
}

check('events apply once and in order; a duplicate is dropped', () => {
  const s = started();
  assert.equal(s.accept(ev(3, 'agent.text.delta', { turn_id: 't1', delta: 'Hel' })), 'dup');
  assert.equal(s.accept(ev(4, 'agent.text.delta', { turn_id: 't1', delta: 'lo' })), 'ok');
  assert.equal(s.turns.get('t1').text, 'Hello');
  assert.deepEqual(s.subscribePayload(), { after_seq: 4, epoch: 'e1' });
  assert.equal(s.status(), 'running');
  const prompt = s.prompts.get('m1');
  assert.equal(prompt.turnId, 't1');
  assert.deepEqual(prompt.parts.map((p) => p.display || p.text), ['fix ', 'a.go']);
});

check('a gap or another epoch asks for a resync and changes nothing', () => {
  const s = started();
  assert.equal(s.accept(ev(5, 'agent.text.delta', { turn_id: 't1', delta: 'X' })), 'resync');
  assert.equal(s.accept({ ...ev(4, 'agent.text.delta', { turn_id: 't1', delta: 'Y' }), epoch: 'e2' }), 'resync');
  assert.equal(s.turns.get('t1').text, 'Hel');
  assert.equal(s.lastSeq, 3);
});

check('interactions: re-sent ones are not doubled, the end of the turn closes them', () => {
  const s = started();
  const req = { interaction_id: 'i1', turn_id: 't1', kind: 'permission', title: 'Allow?', options: [{ value: 'allow_once', label: 'Allow' }] };
  s.accept(ev(4, 'agent.interaction.request', req));
  assert.equal(s.status(), 'waiting');
  s.accept({ type: 'agent.interaction.request', message_id: 'x', session_id: 's1', payload: req }); // re-sent, no seq
  assert.equal(s.turns.get('t1').blocks.filter((b) => b.kind === 'interaction').length, 1);
  assert.equal(s.interactions.get('i1').live, true);
  s.accept(ev(5, 'agent.text.done', { turn_id: 't1', is_cancelled: true, stop_reason: 'cancelled' }));
  assert.equal(s.interactions.get('i1').status, 'cancelled');
  assert.equal(s.turns.get('t1').state, 'cancelled');
  assert.equal(s.status(), 'cancelled');
});

check('a snapshot replaces the history', () => {
  const s = started();
  s.onSubscribed({
    recovered: false, reason: 'retention', epoch: 'e2', from_seq: 41, last_seq: 40,
    snapshot: {
      session: { ...info, state: 'running', epoch: 'e2', last_seq: 40 },
      turns: [{ turn_id: 'a', prompt: 'one <@file:ref_0|x.go>', text: 'done one', done: true, stop_reason: 'end_turn' },
        { turn_id: 'b', prompt: 'two', text: 'partial', done: false }],
      open_interactions: [{ interaction_id: 'i9', turn_id: 'b', kind: 'text_input', title: 'Name?' }],
      artifacts: [{ turn_id: 'a', artifact_id: 'art_1', path: 'out/r.csv', file_name: 'r.csv', size: 3 }],
    },
  });
  assert.deepEqual(s.subscribePayload(), { after_seq: 40, epoch: 'e2' });
  assert.equal(s.turns.size, 2);
  assert.equal(s.turns.get('a').state, 'done');
  assert.equal(s.turns.get('b').state, 'waiting');
  assert.equal(s.running, true);
  assert.equal(s.artifacts.size, 1);
  assert.equal(s.interactions.get('i9').live, false);
  assert.ok(s.items.some((i) => i.kind === 'note'));
  assert.equal(s.accept({ ...ev(41, 'agent.text.delta', { turn_id: 'b', delta: '!' }), epoch: 'e2' }), 'ok');
  assert.equal(s.turns.get('b').text, 'partial!');
});

check('usage adds up the running totals of the turns', () => {
  const s = started();
  s.accept(ev(4, 'agent.usage', { turn_id: 't1', input_tokens: 10, output_tokens: 2, cost_usd: 0.01 }));
  s.accept(ev(5, 'agent.usage', { turn_id: 't1', input_tokens: 30, output_tokens: 5, cost_usd: 0.03 }));
  s.accept(ev(6, 'agent.text.done', { turn_id: 't1', is_cancelled: false, stop_reason: 'end_turn', text: 'Hel' }));
  const tot = s.totals();
  assert.equal(tot.input, 30);
  assert.equal(tot.output, 5);
  assert.equal(tot.cost, 0.03);
  assert.equal(s.status(), 'done');
});

check('the permission timeout in force follows session.opened, session.settings and a snapshot', () => {
  const s = started();
  assert.equal(s.settings, null);
  s.accept(ev(4, 'session.opened', { adapter: 'builtin', mode: 'default', settings: { permission_timeout_ms: 600000 } }, { parent_id: 'o1' }));
  assert.deepEqual(s.settings, { permission_timeout_ms: 600000 });
  s.accept(ev(5, 'session.settings', { permission_timeout_ms: 4000, permission_timeout_set: true }, { parent_id: 'x1' }));
  assert.deepEqual(s.settings, { permission_timeout_ms: 4000, permission_timeout_set: true });
  assert.ok(s.items.some((i) => i.kind === 'note' && i.text === 'Questions now time out after 4 s.'));
  s.accept(ev(6, 'session.settings', { permission_timeout_ms: 0, permission_timeout_set: true }, { parent_id: 'x2' }));
  assert.ok(s.items.some((i) => i.kind === 'note' && i.text === 'Questions now wait for an answer without a time limit.'));
  s.onSubscribed({ recovered: false, reason: 'epoch', epoch: 'e2', from_seq: 10, last_seq: 9,
    snapshot: { session: { ...info, epoch: 'e2', settings: { permission_timeout_ms: 90000, permission_timeout_set: true } }, turns: [] } });
  assert.deepEqual(s.settings, { permission_timeout_ms: 90000, permission_timeout_set: true });
});

check('agent.files.restored marks undone edits and rewound turns, and says what was restored', () => {
  const s = started();
  const diff = (path) => ({ path, hunks: [] });
  s.accept(ev(4, 'agent.tool.started', { turn_id: 't1', tool_use_id: 'e1', tool_name: 'Edit' }));
  s.accept(ev(5, 'agent.tool.finished', { turn_id: 't1', tool_use_id: 'e1', tool_name: 'Edit', status: 'ok', diff: diff('a.go') }));
  s.accept(ev(6, 'agent.text.done', { turn_id: 't1', is_cancelled: false, stop_reason: 'end_turn' }));
  s.accept(ev(7, 'agent.turn.started', { turn_id: 't2', input_type: 'text', mode: 'default' }));
  s.accept(ev(8, 'agent.tool.finished', { turn_id: 't2', tool_use_id: 'e2', tool_name: 'Write', status: 'ok', diff: diff('b.go') }));
  s.accept(ev(9, 'agent.tool.finished', { turn_id: 't2', tool_use_id: 'e3', tool_name: 'Edit', status: 'ok', diff: diff('a.go') }));
  s.accept(ev(10, 'agent.text.done', { turn_id: 't2', is_cancelled: false, stop_reason: 'end_turn' }));
  s.accept(ev(11, 'agent.files.restored', { kind: 'undo', tool_use_id: 'e3', files: [{ path: 'a.go' }] }, { parent_id: 'u1' }));
  assert.equal(s.turns.get('t2').tools.get('e3').undone, true);
  assert.ok(!s.turns.get('t1').tools.get('e1').undone);
  assert.match(s.items.at(-1).text, /Undid the edit: restored a\.go/);
  s.accept(ev(12, 'agent.files.restored', { kind: 'rewind', turn_id: 't2', files: [{ path: 'b.go', deleted: true }], conversation: 'not_rewound', conversation_note: "files rewound; the agent's conversation was not: x" }, { parent_id: 'u2' }));
  assert.equal(s.turns.get('t2').tools.get('e2').undone, true);
  assert.equal(s.turns.get('t2').filesRewound, true);
  assert.equal(s.turns.get('t2').rewound, false);
  assert.ok(!s.turns.get('t1').filesRewound);
  assert.match(s.items.at(-1).text, /b\.go \(deleted: the agent had created it\).*the agent's conversation was not/);
});

console.log(`${passed} checks passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
