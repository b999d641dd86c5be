// Unit checks of draft.js under Node (no browser), run by
// web/drafts_test.go: a draft's bounds, pruning, and a full storage,
// against an in-memory localStorage with a quota.

import assert from 'node:assert/strict';
import {
  DRAFT_PREFIX, MAX_DRAFTS, MAX_CHARS, MAX_AGE_MS, readDraft, writeDraft, deleteDraft, pruneDrafts, bound,
} from '../static/js/draft.js';

/** memoryStorage is localStorage in memory, throwing past quota characters as browsers do. */
function memoryStorage(quota = Infinity) {
  const m = new Map();
  const size = () => [...m].reduce((n, [k, v]) => n + k.length + v.length, 0);
  return {
    get length() { return m.size; },
    key: (i) => [...m.keys()][i] ?? null,
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => {
      const old = m.get(k);
      m.set(k, String(v));
      if (size() > quota) {
        if (old === undefined) m.delete(k);
        else m.set(k, old);
        throw new Error('QuotaExceededError');
      }
    },
    removeItem: (k) => { m.delete(k); },
  };
}

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

const text = (t) => ({ segs: [{ kind: 'text', text: t }], files: [] });

check('a draft is written, read and deleted by session', () => {
  globalThis.window = { localStorage: memoryStorage() };
  assert.ok(writeDraft('s1', { segs: [{ kind: 'text', text: 'hi ' }, { kind: 'file', file: { path: 'a.go' } }], files: [{ upload_id: 'upl_x', file_name: 'n.txt' }] }));
  const d = readDraft('s1');
  assert.deepEqual(d.segs, [{ kind: 'text', text: 'hi ' }, { kind: 'file', file: { path: 'a.go' } }]);
  assert.equal(d.files[0].upload_id, 'upl_x');
  assert.equal(readDraft('s2'), null);
  deleteDraft('s1');
  assert.equal(readDraft('s1'), null);
});

check('malformed stored drafts read as none or lose their bad parts', () => {
  const ls = memoryStorage();
  globalThis.window = { localStorage: ls };
  ls.setItem(`${DRAFT_PREFIX}bad`, '{not json');
  assert.equal(readDraft('bad'), null);
  ls.setItem(`${DRAFT_PREFIX}odd`, JSON.stringify({ at: Date.now(), segs: [{ kind: 'text', text: 'ok' }, { kind: 'file' }, 7], files: [{}, { upload_id: 'upl_1' }] }));
  const d = readDraft('odd');
  assert.deepEqual(d.segs, [{ kind: 'text', text: 'ok' }]);
  assert.deepEqual(d.files, [{ upload_id: 'upl_1' }]);
});

check(`a draft keeps at most ${MAX_CHARS} characters of text`, () => {
  const segs = bound([{ kind: 'text', text: 'a'.repeat(MAX_CHARS - 10) }, { kind: 'file', file: { path: 'x' } }, { kind: 'text', text: 'b'.repeat(50) }, { kind: 'text', text: 'c' }]);
  assert.equal(segs.filter((s) => s.kind === 'text').reduce((n, s) => n + s.text.length, 0), MAX_CHARS);
  assert.equal(segs.length, 3);
});

check(`at most ${MAX_DRAFTS} drafts are kept, the oldest go`, () => {
  const ls = memoryStorage();
  globalThis.window = { localStorage: ls };
  const now = Date.now;
  try {
    for (let i = 0; i < MAX_DRAFTS + 7; i++) {
      Date.now = () => 1e12 + i * 1000;
      writeDraft(`s${i}`, text(`draft ${i}`));
    }
  } finally {
    Date.now = now;
  }
  Date.now = () => 1e12 + (MAX_DRAFTS + 7) * 1000;
  try {
    assert.equal(ls.length, MAX_DRAFTS);
    assert.equal(readDraft('s0'), null);
    assert.equal(readDraft('s6'), null);
    assert.equal(readDraft('s7').segs[0].text, 'draft 7');
  } finally {
    Date.now = now;
  }
});

check('drafts older than 30 days are pruned, other storage is left alone', () => {
  const ls = memoryStorage();
  globalThis.window = { localStorage: ls };
  ls.setItem('ferry.key', 'k');
  ls.setItem(`${DRAFT_PREFIX}old`, JSON.stringify({ at: Date.now() - MAX_AGE_MS - 1000, segs: [] }));
  ls.setItem(`${DRAFT_PREFIX}new`, JSON.stringify({ at: Date.now(), segs: [] }));
  pruneDrafts();
  assert.equal(ls.getItem(`${DRAFT_PREFIX}old`), null);
  assert.ok(ls.getItem(`${DRAFT_PREFIX}new`));
  assert.equal(ls.getItem('ferry.key'), 'k');
});

check('a full storage drops the oldest other drafts to keep the newest', () => {
  const ls = memoryStorage(2000);
  globalThis.window = { localStorage: ls };
  ls.setItem('ferry.key', 'k'.repeat(100));
  const now = Date.now;
  const base = now() - 60000;
  try {
    for (let i = 0; i < 6; i++) {
      Date.now = () => base + i * 1000;
      assert.ok(writeDraft(`s${i}`, text('x'.repeat(300))), `draft ${i} written`);
    }
    Date.now = () => base + 9000;
    assert.ok(writeDraft('big', text('y'.repeat(1200))));
  } finally {
    Date.now = now;
  }
  assert.equal(readDraft('big').segs[0].text.length, 1200);
  assert.equal(readDraft('s0'), null, 'the oldest went');
  assert.equal(ls.getItem('ferry.key'), 'k'.repeat(100), 'not a draft: kept');
  // Larger than the whole storage: not written, nothing else lost.
  assert.equal(writeDraft('huge', text('z'.repeat(5000))), false);
  assert.equal(ls.getItem('ferry.key'), 'k'.repeat(100));
});

check('no storage (forbidden in some private modes): no drafts, no errors', () => {
  globalThis.window = { get localStorage() { throw new Error('SecurityError'); } };
  assert.equal(writeDraft('s', text('x')), false);
  assert.equal(readDraft('s'), null);
  deleteDraft('s');
  pruneDrafts();
});

console.log(`${passed} checks passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
