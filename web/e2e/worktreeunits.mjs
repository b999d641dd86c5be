// Unit checks of worktree.js under Node (no browser), run by
// web/worktree_test.go, which passes a real branch diff (real git, through
// the client's git layer) and the ship error codes of the protocol.

import fs from 'node:fs/promises';
import assert from 'node:assert/strict';
import {
  ISOLATED_KEY, MAX_COPIES, workspaceKey, isolatedChoice, rememberIsolated, startPayloads, branchLine, parsePatch, fileNote,
  removedOf, shipPayload, shipProblem, shipOutcome, shipHelp, conflictPrompt, unshippedLoss, groupOf, usageOf,
} from '../static/js/worktree.js';
import { CODES } from '../static/js/codes.js';
import { SessionState } from '../static/js/session.js';

const input = JSON.parse(await fs.readFile(process.argv[2], 'utf8'));

let failed = 0;
let passed = 0;
function check(name, fn) {
  try {
    fn();
    passed++;
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack || e.message}`);
  }
}

/** memoryStorage is localStorage in memory; full: every write throws. */
function memoryStorage(full = false) {
  const m = new Map();
  return {
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => {
      if (full) throw new Error('QuotaExceededError');
      m.set(k, String(v));
    },
    raw: m,
  };
}

const WT = {
  name: 'fix-login', branch: 'ferry/fix-login', base: 'main', added: 12, removed: 3, files: 2, ahead: 2, behind: 1,
  uncommitted: true, unshipped: true, setup: 'ok',
};

check('the isolated choice is remembered per workspace, and off is the default', () => {
  const st = memoryStorage();
  const a = workspaceKey('m1', 'w1');
  const b = workspaceKey('m1', 'w2');
  assert.equal(isolatedChoice(st, a), false);
  rememberIsolated(st, a, true);
  assert.equal(isolatedChoice(st, a), true);
  assert.equal(isolatedChoice(st, b), false, 'another workspace of the machine');
  assert.equal(isolatedChoice(st, workspaceKey('m2', 'w1')), false, 'the same workspace id on another machine');
  rememberIsolated(st, a, false);
  assert.equal(isolatedChoice(st, a), false);
  assert.deepEqual(JSON.parse(st.raw.get(ISOLATED_KEY)), {}, 'off is forgotten, not stored');
});

check('a broken or full storage costs the choice, never an exception', () => {
  const st = memoryStorage();
  st.setItem(ISOLATED_KEY, '[1,2');
  assert.equal(isolatedChoice(st, 'm/w'), false);
  st.setItem(ISOLATED_KEY, '["m/w"]');
  assert.equal(isolatedChoice(st, 'm/w'), false);
  rememberIsolated(memoryStorage(true), 'm/w', true);
  rememberIsolated(null, 'm/w', true);
  assert.equal(isolatedChoice(null, 'm/w'), false);
});

check('a plain start has no isolation; an isolated one has its base', () => {
  const base = { machine_id: 'm', workspace_id: 'w', adapter: 'builtin', mode: 'default', title: 'Fix login' };
  assert.deepEqual(startPayloads(base, null), [base]);
  const one = startPayloads(base, { base: 'main' }, 1, [], 'g');
  assert.deepEqual(one, [{ ...base, isolation: { base: 'main' } }], 'one isolated session: no group, its own title');
  assert.deepEqual(startPayloads(base, { base: '' })[0].isolation, {}, 'no base: the workspace\'s current branch');
});

check('a best of N starts N copies in one group, each with its agent (default: the first\'s)', () => {
  const base = { machine_id: 'm', workspace_id: 'w', adapter: 'builtin', mode: 'default', title: 'Fix login' };
  const ps = startPayloads(base, { base: 'dev' }, 3, [{ adapter: 'claude' }, { adapter: '' }], 'g-1');
  assert.equal(ps.length, 3);
  assert.deepEqual(ps.map((p) => p.adapter), ['builtin', 'claude', 'builtin']);
  for (const p of ps) assert.deepEqual(p.isolation, { base: 'dev', group: 'g-1' });
  assert.deepEqual(ps.map((p) => p.title), ['Fix login (1 of 3)', 'Fix login (2 of 3)', 'Fix login (3 of 3)']);
  assert.equal(startPayloads(base, {}, 99, [], 'g').length, MAX_COPIES, 'at most MAX_COPIES');
  assert.equal(startPayloads(base, {}, 0, [], 'g').length, 1);
  const untitled = startPayloads({ ...base, title: undefined }, {}, 2, [], 'g');
  assert.ok(untitled.every((p) => p.title === undefined), 'no title: the master makes one from the prompt');
});

check('a row\'s branch line: branch, +/−, ↑↓ and badges, said as one sentence', () => {
  const b = branchLine(WT);
  assert.equal(b.branch, 'ferry/fix-login');
  assert.equal(b.size, '+12 −3');
  assert.equal(b.aheadBehind, '↑2 ↓1');
  assert.equal(b.label, 'Branch ferry/fix-login: 12 lines added, 3 removed; 2 commits ahead of main, 1 behind; uncommitted changes');
  assert.equal(branchLine(null), null);
  assert.equal(branchLine(undefined), null);
  const one = branchLine({ ...WT, added: 1, ahead: 1, uncommitted: false });
  assert.match(one.label, /1 line added, 3 removed; 1 commit ahead of main, 1 behind$/);
});

check('"setup failed" and "folder missing" badges, and the test and ship states', () => {
  const texts = (wt) => branchLine(wt).badges.map((x) => x.text);
  assert.deepEqual(texts({ ...WT, setup: 'failed', missing: true }), ['folder missing', 'setup failed']);
  assert.deepEqual(texts({ ...WT, setup: 'running' }), ['setting up']);
  assert.deepEqual(texts({ ...WT, test: 'failed' }), ['tests failed']);
  assert.deepEqual(texts({ ...WT, test: 'passed', unshipped: false, shipped: { merged: true, pushed: false } }), ['tests passed', 'merged']);
  assert.deepEqual(texts({ ...WT, shipped: { merged: true } }), [], 'merged, then changed again: not "merged"');
  assert.deepEqual(texts({ ...WT, unshipped: false, shipped: { merged: false, pushed: true } }), ['pushed']);
  assert.ok(branchLine({ ...WT, setup: 'failed' }).label.endsWith('; setup failed'));
});

check('removed lines: the protocol says removed, the git layer deleted', () => {
  assert.equal(removedOf({ removed: 4 }), 4);
  assert.equal(removedOf({ deleted: 5 }), 5);
  assert.equal(removedOf({}), 0);
});

// A real branch diff (web/worktree_test.go made it with real git).
const diff = input.diff;
const stats = (d) => {
  let add = 0;
  let del = 0;
  for (const hk of d.hunks) for (const l of hk.lines) { if (l.op === 'add') add++; else if (l.op === 'delete') del++; }
  return { add, del };
};

check('every real patch parses into hunks that add up to git\'s counts', () => {
  const text = diff.filter((f) => !f.binary && f.patch);
  assert.ok(text.length >= 5, `only ${text.length} text files`);
  for (const f of text) {
    const d = parsePatch(f);
    assert.ok(d.hunks.length >= 1 || (f.added === 0 && f.removed === 0), `${f.path}: no hunk`);
    assert.deepEqual(stats(d), { add: f.added, del: f.removed }, f.path);
    for (const hk of d.hunks) {
      const oldN = hk.lines.filter((l) => l.op !== 'add').length;
      const newN = hk.lines.filter((l) => l.op !== 'delete').length;
      assert.equal(oldN, hk.old_lines, `${f.path}: old side of @@ -${hk.old_start},${hk.old_lines}`);
      assert.equal(newN, hk.new_lines, `${f.path}: new side of @@ +${hk.new_start},${hk.new_lines}`);
    }
  }
});

check('the headers are not lines, nor is "\\ No newline at end of file"', () => {
  const eol = diff.find((f) => f.path === 'eol.txt');
  assert.ok(eol.patch.includes('\\ No newline at end of file'), 'git marked the missing newline');
  const d = parsePatch(eol);
  assert.ok(d.hunks.flatMap((x) => x.lines).every((l) => !l.text.startsWith(' No newline') && !l.text.startsWith('++') && !l.text.startsWith('--')));
  assert.deepEqual(d.hunks.flatMap((x) => x.lines).filter((l) => l.op === 'add').map((l) => l.text), ['newline']);
});

check('a new file is drawn as one (no old side), a rename and a binary file say so', () => {
  const nf = diff.find((f) => f.path === 'new/file.ts');
  assert.equal(nf.status, 'added');
  assert.equal(parsePatch(nf).is_new_file, true);
  assert.deepEqual(fileNote(nf), ['new file']);
  const mv = diff.find((f) => f.status === 'renamed');
  assert.ok(mv, 'git saw the rename');
  assert.deepEqual(fileNote(mv), ['renamed from old/name.txt']);
  const bin = diff.find((f) => f.path === 'img.bin');
  assert.equal(bin.binary, true);
  assert.deepEqual(fileNote(bin), ['binary: no text diff to show']);
  assert.deepEqual(fileNote(diff.find((f) => f.path === 'gone.txt')), ['deleted']);
  assert.deepEqual(fileNote({ status: 'modified', truncated: true }), ['the diff is cut here to keep the message small']);
});

check('a patch cut mid-hunk keeps what is there', () => {
  const long = diff.find((f) => f.path === 'long.txt');
  const cut = { ...long, patch: long.patch.slice(0, long.patch.length - 20), truncated: true };
  const d = parsePatch(cut);
  assert.equal(d.truncated, true);
  assert.ok(d.hunks.length >= 1);
  assert.ok(stats(d).add + stats(d).del <= long.added + long.removed);
  assert.deepEqual(parsePatch({ path: 'x', patch: '' }).hunks, []);
  assert.deepEqual(parsePatch({ path: 'x', patch: '@@ -1 +1 @@\n-a\n+b\n' }).hunks,
    [{ old_start: 1, old_lines: 1, new_start: 1, new_lines: 1, lines: [{ op: 'delete', text: 'a' }, { op: 'add', text: 'b' }] }]);
});

check('the ship payload: squash by default, push with a pull request, the message trimmed', () => {
  assert.deepEqual(shipPayload({}), { strategy: 'squash' });
  assert.deepEqual(shipPayload({ message: '  Fix login\n\nBody \n', strategy: 'ff' }), { strategy: 'ff', message: 'Fix login\n\nBody' });
  assert.deepEqual(shipPayload({ strategy: 'none', pullRequest: true, remote: ' fork ' }), { strategy: 'none', push: true, pull_request: true, remote: 'fork' });
  assert.deepEqual(shipPayload({ strategy: 'rebase' }), { strategy: 'squash' }, 'an unknown strategy is the default');
});

check('the ship sheet says what is missing before sending', () => {
  assert.match(shipProblem({ strategy: 'squash' }, { uncommitted: true }), /commit message/);
  assert.equal(shipProblem({ strategy: 'squash' }, { uncommitted: false }), '');
  assert.match(shipProblem({ strategy: 'squash', message: 'x'.repeat(64 * 1024 + 1) }, {}), /64 KiB/);
  assert.equal(shipProblem({ strategy: 'squash', message: 'é'.repeat(32 * 1024) }, {}), '', '64 KiB exactly, in bytes');
  assert.match(shipProblem({ strategy: 'none' }, {}), /Nothing would happen/);
  assert.equal(shipProblem({ strategy: 'none', push: true }, {}), '');
});

check('a ship\'s outcome: what was done, and the pull request or compare link', () => {
  const o = shipOutcome({ commit: 'abcdef0123456789', strategy: 'squash', merged: true, merge_commit: '1234567890abcdef', pushed: true, remote: 'origin', pr_url: 'https://github.com/o/r/pull/7' }, WT);
  assert.deepEqual(o.lines, ['Committed abcdef0123 on ferry/fix-login.', 'Squash-merged into main (1234567890).', 'Pushed ferry/fix-login to origin.']);
  assert.deepEqual(o.links, [{ href: 'https://github.com/o/r/pull/7', text: 'Open the pull request' }]);
  const c = shipOutcome({ strategy: 'none', merged: false, pushed: true, compare_url: 'https://example.com/compare/main...ferry/x' }, WT);
  assert.deepEqual(c.links, [{ href: 'https://example.com/compare/main...ferry/x', text: 'Open a pull request on the forge' }]);
  assert.deepEqual(shipOutcome({ strategy: 'none', merged: false, pushed: false }, WT).lines, ['Nothing to ship: the branch had nothing new.']);
  assert.deepEqual(shipOutcome({ strategy: 'ff', merged: true, pushed: false }, WT).lines, ['Fast-forwarded into main.']);
  assert.deepEqual(shipOutcome({ commit: 'abcdef0123456789', strategy: 'squash', merged: true, merge_commit: 'abcdef0123456789', pushed: false }, WT).lines,
    ['Squash-merged into main (abcdef0123).'], 'one commit, said once');
});

check('every ship error code of the protocol has a human line and says what to do', () => {
  for (const c of input.ship_codes) {
    assert.ok(CODES[c], `${c}: no line in codes.js`);
    const help = shipHelp(c, WT);
    assert.ok(help.length > 20, `${c}: no help`);
    assert.ok(!help.includes('{'), `${c}: a placeholder left in "${help}"`);
  }
  assert.match(shipHelp('base_dirty', WT), /your checkout of main/);
  assert.equal(shipHelp('weird_new', WT), '');
});

check('the conflict prompt names every file, and the base', () => {
  const p = conflictPrompt(['a.go', 'src/b.ts', ''], 'main');
  assert.match(p, /^Resolve the merge conflicts in: a\.go, src\/b\.ts\. /);
  assert.match(p, /base branch main was merged/);
  assert.ok(!p.includes('  '));
});

check('what discarding unshipped work loses, with the branch and without', () => {
  const keep = unshippedLoss(WT, false);
  assert.equal(keep.what, 'uncommitted changes in its worktree and 2 commits not in main (2 files changed, +12 −3)');
  assert.equal(keep.lost, 'the uncommitted changes; the branch ferry/fix-login keeps its 2 commits');
  assert.equal(unshippedLoss(WT, true).lost, 'all of it, and the branch ferry/fix-login');
  assert.equal(unshippedLoss({ ...WT, ahead: 0 }, false).lost, 'the uncommitted changes; the branch ferry/fix-login stays');
  const committed = unshippedLoss({ ...WT, uncommitted: false, ahead: 1 }, false);
  assert.equal(committed.what, '1 commit not in main (2 files changed, +12 −3)');
  assert.equal(committed.lost, 'nothing for good: the branch ferry/fix-login keeps its 1 commit');
});

check('a group lists its sessions oldest first; other groups and plain sessions are not in it', () => {
  const s = (id, at, group) => ({ id, created_at: at, worktree: group ? { ...WT, group } : undefined });
  const list = [s('c', '2026-01-01T00:00:03Z', 'g'), s('a', '2026-01-01T00:00:01Z', 'g'), s('x', '2026-01-01T00:00:00Z', 'h'), s('p', '2026-01-01T00:00:00Z')];
  assert.deepEqual(groupOf(list, 'g').map((x) => x.id), ['a', 'c']);
  assert.deepEqual(groupOf(list, ''), []);
});

check('a copy\'s tokens and cost: the master\'s totals, else its agent.usage events', () => {
  assert.deepEqual(usageOf({ usage: { input_tokens: 10, output_tokens: 5, cost_usd: 0.5 } }, null), { tokens: 15, cost: 0.5 });
  assert.equal(usageOf({}, null), null);
  const st = new SessionState({ id: 's', state: 'idle', mode: 'default' });
  for (const [seq, m] of [[1, { type: 'agent.turn.started', payload: { turn_id: 't1' } }],
    [2, { type: 'agent.usage', payload: { turn_id: 't1', input_tokens: 1000, output_tokens: 200, cost_usd: 0.01 } }],
    [3, { type: 'agent.text.done', payload: { turn_id: 't1', text: 'ok' } }]]) {
    assert.equal(st.accept({ ...m, seq, session_id: 's' }), 'ok');
  }
  assert.deepEqual(usageOf({}, st.totals()), { tokens: 1200, cost: 0.01 });
});

check('the session state keeps the worktree, the setup run and a ship from its events', () => {
  const st = new SessionState({ id: 's', state: 'idle', mode: 'default' });
  let seq = 0;
  const ev = (type, payload, extra = {}) => st.accept({ type, payload, session_id: 's', seq: ++seq, ...extra });
  ev('session.opened', { mode: 'default', worktree: { ...WT, setup: 'running' } });
  assert.equal(st.info.worktree.setup, 'running');
  ev('session.worktree.setup', { state: 'running', output: 'npm ci\n' });
  ev('session.worktree.setup', { state: 'failed', output: 'npm ci\nnpm ERR! missing\n', exit_code: 1 });
  const runs = st.items.filter((i) => i.kind === 'output');
  assert.equal(runs.length, 1, 'one item per run, updated in place');
  assert.deepEqual([runs[0].what, runs[0].state, runs[0].exitCode], ['setup', 'failed', 1]);
  assert.match(runs[0].output, /npm ERR!/);
  ev('session.worktree.status', { worktree: { ...WT, setup: 'failed' } });
  assert.equal(st.info.worktree.setup, 'failed');
  // A reply without seq (the asker's copy) shows nothing; the stored one does.
  st.accept({ type: 'session.worktree.tested', payload: { ran: true, passed: false, exit_code: 2, output: 'FAIL' }, session_id: 's', parent_id: 'x' });
  assert.equal(st.items.filter((i) => i.kind === 'output').length, 1);
  ev('session.worktree.tested', { ran: true, passed: false, exit_code: 2, output: 'FAIL' }, { parent_id: 'x' });
  assert.equal(st.items.filter((i) => i.kind === 'output' && i.what === 'test').length, 1);
  assert.equal(st.info.worktree.test, 'failed');
  ev('session.worktree.shipped', { result: { strategy: 'squash', merged: true, pushed: false }, worktree: { ...WT, unshipped: false, ahead: 0 } });
  assert.equal(st.info.worktree.unshipped, false);
  assert.ok(st.items.some((i) => i.kind === 'note' && /^Shipped: Squash-merged into main\./.test(i.text)));
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
