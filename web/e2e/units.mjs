// Unit checks of the UI's pure modules under Node (no browser), run by
// web/units_test.go: the prompt parser against the Go one, and the resume
// rules of the session state.

import fs from 'node:fs/promises';
import assert from 'node:assert/strict';
import { parsePrompt } from '../static/js/fileref.js';
import { SessionState, attachedFiles, promptFailure, editSegments } from '../static/js/session.js';
import { instructionPath, relativePath, shortenPath, toolPath } from '../static/js/util.js';
import { TOOL_CODES, CODES, toolErrorText, toolErrorCode, namedToolOutput, errorNote } from '../static/js/codes.js';
import { cleanTitle } from '../static/js/manage.js';
import { pickBase, settingsPayload } from '../static/js/modelsetting.js';
import {
  MAX_FILE_BYTES, MAX_FILES, faultIndex, pastedName, uniqueName, precheck, overMessage, contextFiles, uploadOutcome, errorText, imageDataURL, busyWait, upload,
  fileKind, byKind,
} from '../static/js/attach.js';
import { WaitingBadge, titleFor, waitingCount } from '../static/js/badge.js';
import { registerWorker } from '../static/js/worker.js';
import { timeoutAnswer, timeoutFate } from '../static/js/timeoutsetting.js';
import { parseTodos, todoLine, todoSummary } from '../static/js/todos.js';

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

// Every error code the protocol, the agents and the tools define has a
// name and a line (web/units_test.go collects them from their sources).
const codes = JSON.parse(await fs.readFile(process.argv[3], 'utf8'));
check('every string error code has a human line', () => {
  assert.deepEqual(codes.strings.filter((c) => !CODES[c]), []);
});
check('every tool code has the name docs/tools.md gives it', () => {
  for (const [n, name] of Object.entries(codes.tools)) assert.equal(TOOL_CODES[n]?.[0], name, `code ${n}`);
  assert.equal(toolErrorText(15), 'denied: you, a permission rule or the mode refused the call');
  assert.equal(toolErrorText(42), 'the tool failed');
  assert.equal(toolErrorCode(15), 'tool error code 15');
});
check('a tool\'s "Error (code 15):" output reads with the name', () => {
  assert.equal(namedToolOutput('Error (code 15): the user refused.'), 'Error: denied (code 15): the user refused.');
  assert.equal(namedToolOutput('Error (code 77): x'), 'Error (code 77): x');
  assert.equal(namedToolOutput('ok, Error (code 15): x'), 'ok, Error (code 15): x');
});
check('an agent error reads with what its code means, never the code', () => {
  assert.equal(errorNote({ code: 'agent_exited', message: 'claude exited with status 1' }),
    'claude exited with status 1 (the agent\'s process ended; later turns fail the same way)');
  assert.equal(errorNote({ code: 'busy' }), 'the session is already running a turn');
  assert.equal(errorNote({ code: 'busy', message: 'the session is already running a turn' }), 'the session is already running a turn');
  assert.equal(errorNote({ code: 'weird_new', message: 'x' }), 'x');
  assert.equal(errorNote({ code: 'weird_new' }), 'it failed for a reason this page does not know');
  // A restart names what restarted: ferry there, not the machine.
  const r = errorNote({ code: 'restarted', message: 'ferry restarted during this turn; …' }, { machine: 'box' });
  assert.match(r, /^Ferry on the machine “box” \(ferry up or ferry connect\) stopped during the turn/);
  assert.doesNotMatch(r, /restarted\b.*\(restarted|machine restarted/);
  for (const [code, line] of Object.entries(CODES)) {
    const note = errorNote({ code, message: 'm' });
    if (!code.includes('_')) continue;
    assert.ok(!note.includes(code) && !note.includes(`(${code.replaceAll('_', ' ')}`), `${code}: ${note} (${line})`);
  }
});

check('tool paths are workspace-relative', () => {
  assert.equal(relativePath('/home/me/proj/src/a.go', '/home/me/proj'), 'src/a.go');
  assert.equal(relativePath('/home/me/proj/src/a.go', '/home/me/proj/'), 'src/a.go');
  assert.equal(relativePath('/home/me/proj', '/home/me/proj'), '.');
  assert.equal(relativePath('/home/me/project2/a.go', '/home/me/proj'), '/home/me/project2/a.go', 'a sibling with the same prefix');
  assert.equal(relativePath('/etc/passwd', '/home/me/proj'), '/etc/passwd');
  assert.equal(relativePath('src/a.go', '/home/me/proj'), 'src/a.go');
  assert.equal(relativePath('/x/a.go', ''), '/x/a.go');
  assert.equal(toolPath({ file_path: '/w/src/a.go' }, '/w'), 'src/a.go');
  assert.equal(toolPath({ path: '/w/src' }, '/w'), 'src');
  assert.equal(toolPath({ command: 'ls /w' }, '/w'), '');
});
check('long paths are cut from the left, at a directory', () => {
  assert.equal(shortenPath('src/a.go', 20), 'src/a.go');
  assert.equal(shortenPath('very/long/directory/names/here/file.go', 20), '…/names/here/file.go');
  assert.ok(shortenPath('very/long/directory/names/here/file.go', 20).length <= 20);
  assert.equal(shortenPath('a/averyveryverylongfilename.go', 12), '…ylongfilename.go'.slice(-12).replace(/^./, '…'));
  assert.ok(shortenPath('a/averyveryverylongfilename.go', 12).endsWith('filename.go'));
});

check('instruction files: short paths in and above the workspace, others in full', () => {
  assert.equal(instructionPath('/r/app/AGENTS.md', '/r/app'), 'AGENTS.md');
  assert.equal(instructionPath('/r/app/AGENTS.md', '/r/app/'), 'AGENTS.md');
  assert.equal(instructionPath('/r/AGENTS.md', '/r/app'), '../AGENTS.md');
  assert.equal(instructionPath('/CLAUDE.md', '/r/app'), '../../CLAUDE.md');
  assert.equal(instructionPath('/r/ap/AGENTS.md', '/r/app'), '/r/ap/AGENTS.md', 'a sibling with the same prefix');
  assert.equal(instructionPath('/home/u/.config/ferry/AGENTS.md', '/home/u/src/app'), '/home/u/.config/ferry/AGENTS.md');
  assert.equal(instructionPath('/r/AGENTS.md', ''), '/r/AGENTS.md');
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

check('agent.instructions and the snapshot set the instruction files', () => {
  const s = new SessionState(info);
  s.onSubscribed({ recovered: false, epoch: 'e1', last_seq: 1, snapshot: { session: info, turns: [], instructions: [{ path: '/w/AGENTS.md', bytes: 3 }] } });
  assert.deepEqual(s.instructions, [{ path: '/w/AGENTS.md', bytes: 3 }]);
  assert.equal(s.accept(ev(2, 'agent.instructions', { files: [] })), 'ok');
  assert.deepEqual(s.instructions, []);
});

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

check('the todo list: the last TodoWrite that finished ok; refused and sub-agent lists are not the session\'s', () => {
  const s = started();
  const list = [{ content: 'Read', status: 'completed' }, { content: 'Fix', status: 'in_progress', activeForm: 'Fixing' }, { content: 'Test', status: 'bogus' }];
  const tool = (seq, id, todos, extra = {}) => s.accept(ev(seq, 'agent.tool.started', { turn_id: 't1', tool_use_id: id, tool_name: 'TodoWrite', input: { todos }, ...extra }));
  const done = (seq, id, status) => s.accept(ev(seq, 'agent.tool.finished', { turn_id: 't1', tool_use_id: id, tool_name: 'TodoWrite', status }));
  assert.equal(tool(4, 'a', list), 'ok');
  assert.equal(s.todos, null, 'a list is shown before its call finished');
  assert.equal(done(5, 'a', 'ok'), 'ok');
  assert.deepEqual(s.todos.map((t) => [t.content, t.status, t.activeForm]), [['Read', 'completed', ''], ['Fix', 'in_progress', 'Fixing'], ['Test', 'pending', '']]);
  assert.deepEqual(todoSummary(s.todos), { done: 1, total: 3, what: 'Fixing' });
  tool(6, 'b', [{ content: 'x', status: 'in_progress' }, { content: 'y', status: 'in_progress' }]);
  done(7, 'b', 'error');
  tool(8, 'c', [{ content: 'sub', status: 'pending' }], { parent_tool_use_id: 'task1' });
  done(9, 'c', 'ok');
  assert.equal(s.todos.length, 3, 'a refused or a sub-agent\'s list replaced the session\'s');
  assert.equal(todoLine({ todos: [] }), 'cleared the list');
  assert.equal(todoLine({ todos: [{ content: 'a', status: 'completed' }] }), '1/1 · All done');
  assert.equal(parseTodos({ todos: 'x' }), null);
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

check("the agent's own commands: the latest agent.commands, and a snapshot's", () => {
  const s = started();
  assert.deepEqual(s.commands, []);
  s.accept(ev(4, 'agent.commands', { commands: [{ name: 'review', description: 'Review' }] }));
  s.accept(ev(5, 'agent.commands', { commands: [{ name: 'init' }, { name: 'review' }] }));
  assert.deepEqual(s.commands.map((c) => c.name), ['init', 'review']);
  s.onSubscribed({ recovered: false, reason: 'retention', epoch: 'e2', from_seq: 11, last_seq: 10,
    snapshot: { session: info, turns: [], commands: [{ name: 'plugin:cmd', hint: 'x' }] } });
  assert.deepEqual(s.commands, [{ name: 'plugin:cmd', hint: 'x' }]);
});

check("the session's own capability: the latest agent.capabilities, and a snapshot's", () => {
  const s = started();
  assert.equal(s.capabilities, null);
  s.accept(ev(4, 'agent.capabilities', { adapter: { id: 'acp:x', modes: ['default', 'plan'], compact: false } }));
  assert.deepEqual(s.capabilities.modes, ['default', 'plan']);
  s.onSubscribed({ recovered: false, reason: 'retention', epoch: 'e2', from_seq: 11, last_seq: 10,
    snapshot: { session: info, turns: [], capabilities: { id: 'acp:x', modes: ['default'], compact: true } } });
  assert.equal(s.capabilities.compact, true);
  s.onSubscribed({ recovered: false, reason: 'retention', epoch: 'e3', from_seq: 21, last_seq: 20, snapshot: { session: info, turns: [] } });
  assert.equal(s.capabilities, null, 'a snapshot without one: the adapter declaration holds again');
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

check('a model pick in session.settings is noted as a model, not as a new timeout', () => {
  const s = started();
  s.accept(ev(4, 'session.opened', { adapter: 'builtin', mode: 'default', settings: { permission_timeout_ms: 600000 } }, { parent_id: 'o1' }));
  const notes = () => s.items.filter((i) => i.kind === 'note').map((i) => i.text);
  s.accept(ev(5, 'session.settings', { permission_timeout_ms: 600000, model: 'claude-sonnet-4-5' }, { parent_id: 'x1' }));
  s.accept(ev(6, 'session.settings', { permission_timeout_ms: 600000, model: 'claude-sonnet-4-5', effort: 'high' }, { parent_id: 'x2' }));
  assert.deepEqual(notes(), ['From the next turn: claude-sonnet-4-5.', 'From the next turn: claude-sonnet-4-5, thinking high.']);
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

// A prompt its client refused (agent.prompt.refused, stored by the master):
// every UI shows it on the prompt, also after a reload and when its sender
// is gone; the sender, which also gets the error, shows it once.
const refusedPrompt = { code: 'busy', message: 'the session already runs a turn' };
const promptReq = (seq, id, extra = {}) => ({ ...ev(seq, 'control.prompt.request', { prompt_text: 'go on in <@file:ref_0|a.go>', file_references: [{ ref_id: 'ref_0', path: 'src/a.go', name: 'a.go', workspace_relative_path: 'src/a.go', workspace_id: 'w2' }], ...extra }), message_id: id });

check('a refusal stored by the master marks the prompt on every UI: not run, send it again', () => {
  const s = new SessionState(info);
  s.onSubscribed({ recovered: true, epoch: 'e1', from_seq: 1, last_seq: 0 });
  s.accept(promptReq(1, 'p1'));
  const before = s.items.length;
  assert.equal(s.accept(ev(2, 'agent.prompt.refused', refusedPrompt, { parent_id: 'p1' })), 'ok');
  const p = s.prompts.get('p1');
  assert.equal(p.status, 'failed');
  assert.deepEqual(promptFailure(p), { lead: 'Not run', message: 'the session already runs a turn', code: 'busy', then: 'Send it again.' });
  assert.equal(s.items.length, before, 'no note besides the prompt');
  assert.equal(s.running, false);
  // A reload replays it: the same.
  const r = new SessionState(info);
  r.onSubscribed({ recovered: true, epoch: 'e1', from_seq: 1, last_seq: 2 });
  r.accept(promptReq(1, 'p1', { context_files: [{ file_url: 'ferry-upload:u1', file_name: 'shot.png', mime_type: 'image/png' }] }));
  r.accept(ev(2, 'agent.prompt.refused', refusedPrompt, { parent_id: 'p1' }));
  assert.equal(promptFailure(r.prompts.get('p1')).then, 'Send it again, with its files attached again.');
});

check('the sender gets the error and the stored refusal: one failure, said once', () => {
  const s = new SessionState(info);
  s.onSubscribed({ recovered: true, epoch: 'e1', from_seq: 1, last_seq: 0 });
  s.addPending('p1', [{ text: 'go on' }], 'text');
  s.accept(promptReq(1, 'p1'));
  s.promptFailed('p1', refusedPrompt); // the error answering this UI's prompt
  s.accept(ev(2, 'agent.prompt.refused', refusedPrompt, { parent_id: 'p1' }));
  assert.equal(s.items.filter((i) => i.kind === 'prompt').length, 1);
  assert.equal(s.items.filter((i) => i.kind === 'note').length, 0);
  assert.equal(promptFailure(s.prompts.get('p1')).lead, 'Not run');
  // The stored one first, the error after: the same.
  const t = new SessionState(info);
  t.onSubscribed({ recovered: true, epoch: 'e1', from_seq: 1, last_seq: 0 });
  t.addPending('p1', [{ text: 'go on' }], 'text');
  t.accept(promptReq(1, 'p1'));
  t.accept(ev(2, 'agent.prompt.refused', refusedPrompt, { parent_id: 'p1' }));
  t.promptFailed('p1', refusedPrompt);
  assert.deepEqual(promptFailure(t.prompts.get('p1')), promptFailure(s.prompts.get('p1')));
});

check('a prompt the master refused was not delivered; a refusal never undoes a turn', () => {
  const s = new SessionState(info);
  s.onSubscribed({ recovered: true, epoch: 'e1', from_seq: 1, last_seq: 0 });
  s.addPending('p0', [{ text: 'x' }], 'text');
  s.promptFailed('p0', { code: 'client_offline', message: 'the machine is offline' });
  assert.deepEqual(promptFailure(s.prompts.get('p0')), { lead: 'Not delivered', message: 'the machine is offline', code: 'client_offline', then: '' });
  s.accept(promptReq(1, 'p1'));
  s.accept(ev(2, 'agent.turn.started', { turn_id: 't1', input_type: 'text', mode: 'default' }, { parent_id: 'p1' }));
  s.accept(ev(3, 'agent.prompt.refused', refusedPrompt, { parent_id: 'p1' }));
  assert.equal(s.prompts.get('p1').status, 'sent');
  assert.equal(s.accept(ev(4, 'agent.prompt.refused', refusedPrompt, { parent_id: 'unknown' })), 'ok');
});

check('a refused prompt goes back to the box as its text and file chips', () => {
  const s = new SessionState(info);
  s.accept(promptReq(1, 'p1'));
  assert.deepEqual(editSegments(s.prompts.get('p1').parts), [
    { kind: 'text', text: 'go on in ' },
    { kind: 'file', file: { path: 'src/a.go', display_path: 'a.go', workspace_id: 'w2' } },
  ]);
  const picked = { path: 'b.go', display_path: 'b.go' };
  assert.deepEqual(editSegments([{ text: 'see ' }, { file: picked, display: 'b.go' }, { file: null, refId: 'r', display: 'gone.go' }]),
    [{ kind: 'text', text: 'see ' }, { kind: 'file', file: { path: 'b.go', display_path: 'b.go' } }, { kind: 'text', text: 'gone.go' }]);
});

// Attachments (attach.js): the pure parts of the chips.

check('a pasted image is named after the local time, with its type\'s extension', () => {
  const d = new Date(2026, 11, 2, 5, 7, 9);
  assert.equal(pastedName(d, 'image/png'), 'pasted-20261202-050709.png');
  assert.equal(pastedName(d, 'image/jpeg'), 'pasted-20261202-050709.jpg');
  assert.equal(pastedName(d, 'image/webp'), 'pasted-20261202-050709.webp');
  assert.equal(pastedName(new Date(2027, 0, 31, 23, 59, 59), 'image/gif'), 'pasted-20270131-235959.gif');
  assert.equal(pastedName(d, ''), 'pasted-20261202-050709.png');
  assert.equal(uniqueName('a.png', new Set()), 'a.png');
  assert.equal(uniqueName('a.png', new Set(['a.png', 'a-2.png'])), 'a-3.png');
  assert.equal(uniqueName('README', new Set(['README'])), 'README-2');
});

check('attachments by kind: image, pdf, else text, against what the agent takes', () => {
  assert.deepEqual(['image/png', 'application/pdf', 'text/markdown', '', 'application/json'].map((type) => fileKind({ type })), ['image', 'pdf', 'text', 'text', 'text']);
  const files = [{ name: 'a.png', type: 'image/png' }, { name: 'b.txt', type: 'text/plain' }, { name: 'c.pdf', type: 'application/pdf' }];
  const { take, refuse } = byKind(['text'], files);
  assert.deepEqual(take.map((f) => f.name), ['b.txt']);
  assert.deepEqual(refuse.map((f) => f.name), ['a.png', 'c.pdf']);
  assert.equal(byKind(['text', 'image', 'pdf'], files).refuse.length, 0);
});

check('the pre-checks: at most 10 files, none empty or over 20 MiB', () => {
  const f = (name, size) => ({ name, size });
  const pc = precheck(0, [f('a.txt', 3), f('big.bin', MAX_FILE_BYTES + 1), f('edge.bin', MAX_FILE_BYTES), f('empty', 0)]);
  assert.deepEqual(pc.accept.map((x) => x.name), ['a.txt', 'edge.bin']);
  assert.deepEqual(pc.refuse.map((x) => [x.file.name, x.code]), [['big.bin', 'too_large'], ['empty', 'invalid_value']]);
  assert.equal(pc.refuse[0].message, 'too large: 20 MiB; the limit is 20 MiB');
  assert.match(precheck(0, [f('x', 25.5 * 1048576)]).refuse[0].message, /^too large: 25\.5 MiB; the limit is 20 MiB$/);
  const full = precheck(MAX_FILES - 2, [f('1', 1), f('2', 1), f('3', 1), f('4', 1)]);
  assert.deepEqual(full.accept.map((x) => x.name), ['1', '2']);
  assert.deepEqual(full.over.map((x) => x.name), ['3', '4']);
  assert.equal(overMessage(full.over), 'At most 10 files per prompt: 3, 4 were not added.');
  assert.equal(overMessage([f('one', 1)]), 'At most 10 files per prompt: one was not added.');
  assert.equal(overMessage(['a', 'b', 'c', 'd', 'e'].map((n) => f(n, 1))), 'At most 10 files per prompt: a, b, c and 2 more were not added.');
  assert.equal(overMessage([]), '');
});

check('context_files: the uploaded chips in order, as ferry-upload: URLs', () => {
  const chips = [
    { name: 'shot.png', state: 'done', upload: { upload_id: 'upl_a1', file_name: 'shot.png', mime_type: 'image/png', size_bytes: 9 } },
    { name: 'slow.txt', state: 'uploading', upload: null },
    { name: 'bad.exe', state: 'error', upload: null, error: { code: 'unsupported', message: 'not a type ferry takes' } },
    { name: 'notes.md', state: 'done', upload: { upload_id: 'upl_b2', file_name: 'notes.md' } },
  ];
  assert.deepEqual(contextFiles(chips), [
    { file_url: 'ferry-upload:upl_a1', file_name: 'shot.png', mime_type: 'image/png' },
    { file_url: 'ferry-upload:upl_b2', file_name: 'notes.md' },
  ]);
  assert.deepEqual(contextFiles([]), []);
  // What a prompt shows of them: names and types, never the URL (its grant).
  assert.deepEqual(attachedFiles([{ file_url: 'ferry-upload:upl_a1?grant=SECRET', file_name: 'shot.png', mime_type: 'image/png' }]), [{ name: 'shot.png', type: 'image/png' }]);
  assert.deepEqual(attachedFiles(undefined), []);
});

check('a refusal naming one of the context_files points at its chip', () => {
  assert.equal(faultIndex('payload.context_files[0]'), 0);
  assert.equal(faultIndex('payload.context_files[12].file_url'), 12);
  for (const f of ['', undefined, 'payload.segments[0]', 'payload.context_files', 'payload.context_files[x]', 'payload.context_files[1]x', 'xpayload.context_files[1]']) {
    assert.equal(faultIndex(f), -1, String(f));
  }
});

check('an upload\'s answer: the upload, or the master\'s coded error, or one from the status', () => {
  const ok = { upload_id: 'upl_x9', file_name: 'a.png', mime_type: 'image/png', size_bytes: 3, expires_at: '2026-12-03T00:00:00Z' };
  assert.deepEqual(uploadOutcome(201, JSON.stringify(ok)), { upload: ok });
  assert.deepEqual(uploadOutcome(201, JSON.stringify({ upload_id: '../x' })).error.code, 'internal');
  assert.deepEqual(uploadOutcome(413, JSON.stringify({ error: { code: 'too_large', field: 'file', message: 'the file passes 20 MiB' } })),
    { error: { code: 'too_large', field: 'file', message: 'the file passes 20 MiB' } });
  assert.equal(uploadOutcome(415, 'not json').error.code, 'unsupported');
  assert.equal(uploadOutcome(401, '').error.code, 'unauthorized');
  assert.equal(uploadOutcome(0, '').error.code, 'connection_lost');
  assert.equal(uploadOutcome(502, '<html>').error.message, 'the upload failed (HTTP 502)');
  assert.equal(errorText({ code: 'too_large', message: 'the file passes 20 MiB' }), 'the file passes 20 MiB');
  assert.equal(errorText({ code: 'too_large', message: '' }), 'the file could not be attached');
  assert.equal(errorText({ code: 'internal', message: 'the upload failed (HTTP 502)' }), 'the upload failed (HTTP 502)');
});

check('a busy upload is tried again after its Retry-After, 1 to 30 s, else 2 s', () => {
  assert.equal(busyWait('2'), 2000);
  assert.equal(busyWait('7'), 7000);
  assert.equal(busyWait('3600'), 30000);
  for (const bad of [null, '', '0', '-4', 'soon', 'Wed, 21 Oct 2015 07:28:00 GMT']) assert.equal(busyWait(bad), 2000);
});

check('tool images: only PNG, JPEG, GIF and WebP in valid base64 become data: URLs', () => {
  const png = 'iVBORw0KGgo=';
  assert.equal(imageDataURL({ media_type: 'image/png', data: png }), `data:image/png;base64,${png}`);
  assert.equal(imageDataURL({ media_type: 'IMAGE/JPEG', data: 'AAAA' }), 'data:image/jpeg;base64,AAAA');
  for (const t of ['image/gif', 'image/webp']) assert.ok(imageDataURL({ media_type: t, data: 'AAAA' }));
  for (const bad of [
    { media_type: 'image/svg+xml', data: 'AAAA' },
    { media_type: 'text/html', data: 'AAAA' },
    { media_type: 'image/png;charset=x', data: 'AAAA' },
    { media_type: 'image/png', data: '' },
    { media_type: 'image/png', data: 'AAA' },
    { media_type: 'image/png', data: 'AA A' },
    { media_type: 'image/png', data: 'AAAA"onerror=x' },
    { media_type: 'image/png', data: 'AA==AAAA' },
    { media_type: 'image/png', data: 'A'.repeat((1 << 20) + 4) },
    { media_type: 'image/png', data: 42 },
    { data: 'AAAA' }, null, 'data:image/png;base64,AAAA',
  ]) assert.equal(imageDataURL(bad), '', JSON.stringify(bad)?.slice(0, 60));
});

check('agent.tool.finished keeps the tool\'s images', () => {
  const s = started();
  s.accept(ev(4, 'agent.tool.started', { turn_id: 't1', tool_use_id: 'r1', tool_name: 'Read', input: { file_path: 'a.png' } }));
  s.accept(ev(5, 'agent.tool.finished', { turn_id: 't1', tool_use_id: 'r1', tool_name: 'Read', status: 'ok', images: [{ media_type: 'image/png', data: 'AAAA' }] }));
  assert.deepEqual(s.turns.get('t1').tools.get('r1').images, [{ media_type: 'image/png', data: 'AAAA' }]);
});

// The title and badge: how many sessions wait for the user.
check('the title counts the sessions that wait for the user', () => {
  const n = waitingCount([{ waiting: 2 }, { waiting: 0 }, {}, { waiting: 1, state: 'running' }, { state: 'running' }]);
  assert.equal(n, 2);
  assert.equal(titleFor(n), '(2) ferry');
  assert.equal(titleFor(0), 'ferry');
});
check('the badge is set on each change of the count, cleared at zero, and skipped without the API', () => {
  const calls = [];
  const doc = { title: 'ferry' };
  const nav = {
    setAppBadge: (n) => { calls.push(n); return Promise.resolve(); },
    clearAppBadge: () => { calls.push('clear'); return Promise.reject(new Error('no permission')); },
  };
  const b = new WaitingBadge(doc, nav);
  for (const n of [0, 2, 2, 1, 0, 0]) b.show(n);
  assert.deepEqual(calls, ['clear', 2, 1, 'clear']);
  assert.equal(doc.title, 'ferry');
  b.show(3);
  assert.equal(doc.title, '(3) ferry');
  const bare = new WaitingBadge(doc, {});
  bare.show(4);
  assert.equal(doc.title, '(4) ferry');
});

// The service worker's registration.
async function checkAsync(name, fn) {
  try {
    await fn();
    passed++;
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}
await checkAsync('registerWorker registers /sw.js at scope /, or resolves null where it cannot', async () => {
  const asked = [];
  const reg = { scope: 'http://127.0.0.1/' };
  const nav = { serviceWorker: { register: (url, opts) => { asked.push([url, opts]); return Promise.resolve(reg); } } };
  assert.equal(await registerWorker(nav, true), reg);
  assert.deepEqual(asked, [['/sw.js', { scope: '/', updateViaCache: 'none' }]]);
  assert.equal(await registerWorker(nav, false), null, 'not a secure context');
  assert.equal(await registerWorker({}, true), null, 'no service worker support');
  assert.equal(asked.length, 1);
  const warn = console.warn;
  console.warn = () => {};
  try {
    const refused = { serviceWorker: { register: () => Promise.reject(new Error('SecurityError')) } };
    assert.equal(await registerWorker(refused, true), null, 'a refused registration');
  } finally {
    console.warn = warn;
  }
});

// An upload the master answers busy is tried again after its Retry-After;
// abort() stops it while it waits.
await checkAsync('a busy upload is tried again after Retry-After, and abort stops the wait', async () => {
  const sent = [];
  const answers = [];
  globalThis.XMLHttpRequest = class {
    constructor() { this.handlers = {}; this.upload = { addEventListener() {} }; }
    open(method, url) { this.url = url; }
    setRequestHeader() {}
    addEventListener(ev, fn) { this.handlers[ev] = fn; }
    getResponseHeader(h) { return h === 'Retry-After' ? this.retryAfter : null; }
    abort() { this.handlers.abort?.(); }
    send() {
      sent.push(this.url);
      const a = answers.shift();
      if (!a) return; // never answered: hangs until aborted
      Object.assign(this, a);
      setTimeout(() => this.handlers.load(), 0);
    }
  };
  try {
    const busy = { status: 503, retryAfter: '1', responseText: JSON.stringify({ error: { code: 'busy', message: 'the master already receives 4 uploads at once' } }) };
    const ok = { upload_id: 'upl_ok1', file_name: 'a.txt', mime_type: 'text/plain', size_bytes: 1, expires_at: '2026-12-03T00:00:00Z' };
    answers.push(busy, busy, { status: 201, responseText: JSON.stringify(ok) });
    const start = Date.now();
    const res = await upload('s1', new Blob(['a']), 'a.txt', () => {}).done;
    assert.deepEqual(res, { upload: ok });
    assert.equal(sent.length, 3);
    assert.ok(Date.now() - start >= 1900, `tried again after ${Date.now() - start} ms, want Retry-After's 1 s each time`);

    answers.push(busy);
    const up = upload('s1', new Blob(['a']), 'a.txt', () => {});
    await new Promise((r) => { setTimeout(r, 50); });
    const t0 = Date.now();
    up.abort();
    assert.equal((await up.done).error.code, 'cancelled');
    assert.ok(Date.now() - t0 < 500, 'abort did not end the wait');
    assert.equal(sent.length, 4);
  } finally {
    delete globalThis.XMLHttpRequest;
  }
});

// The rename form's pre-check takes a title as protocol.CleanTitle does
// (web/units_test.go makes the vectors with it).
const titles = JSON.parse(await fs.readFile(process.argv[4], 'utf8'));
check(`the rename form agrees with protocol.CleanTitle on ${titles.length} titles`, () => {
  const wrong = titles.filter((v) => {
    const got = cleanTitle(v.in);
    return (got.problem === '') !== v.ok || (v.ok && got.title !== v.title);
  });
  assert.deepEqual(wrong.slice(0, 3).map((v) => ({ ...v, got: cleanTitle(v.in) })), []);
});

check('an effort picked before the model pick is confirmed keeps that model', () => {
  const inForce = { permission_timeout_ms: 60000, permission_timeout_set: true };
  const pending = { model: 'claude-sonnet-4-5', effort: '' };
  assert.deepEqual(settingsPayload(pickBase(inForce, pending), { effort: 'high' }),
    { permission_timeout_ms: 60000, model: 'claude-sonnet-4-5', effort: 'high' });
  assert.deepEqual(settingsPayload(pickBase(inForce, null), { effort: 'high' }),
    { permission_timeout_ms: 60000, effort: 'high' });
});

// What a question's card says a timeout will answer is what the master
// applies (web/units_test.go makes the vectors with protocol TimeoutAnswer).
const timeouts = JSON.parse(await fs.readFile(process.argv[5], 'utf8'));
check(`the card's timeout answer agrees with protocol TimeoutAnswer on ${timeouts.length} requests`, () => {
  const wrong = timeouts.filter((v) => JSON.stringify(timeoutAnswer(v.req)) !== JSON.stringify(v.answer));
  assert.deepEqual(wrong.slice(0, 3).map((v) => ({ ...v, got: timeoutAnswer(v.req) })), []);
});

check('the card says which answer a timeout applies', () => {
  const perm = { kind: 'permission', options: [{ value: 'allow_once', label: 'Allow once' }, { value: 'deny', label: 'Deny' }] };
  assert.equal(timeoutFate({ ...perm, default_value: 'deny' }), 'it is denied');
  assert.equal(timeoutFate(perm), 'it is denied');
  const pick = { kind: 'single_select', options: [{ value: 'pg', label: 'PostgreSQL' }, { value: 'lite', label: 'SQLite' }] };
  assert.equal(timeoutFate({ ...pick, default_value: 'lite' }), 'it takes “SQLite”');
  assert.equal(timeoutFate(pick), 'it goes unanswered, which the agent takes as a denial');
  assert.equal(timeoutFate({ kind: 'multi_select', options: pick.options, default_value: 'pg, lite' }), 'it takes “PostgreSQL”, “SQLite”');
  assert.equal(timeoutFate({ kind: 'text_input', default_value: 'no' }), 'it is answered “no”');
});

console.log(`${passed} checks passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
