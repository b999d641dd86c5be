// The pure parts of isolated sessions (docs/worktrees.md): what a session
// row says of its branch, the per-workspace "isolated" choice, the
// ui.session.start payloads of a best of N, a branch diff's patch as the
// hunks diff.js draws, what a ship or its refusal says and what to do, the
// prompt asking the agent to resolve a conflict, and what archiving or
// deleting an unshipped session loses. No DOM and no messages here
// (worktreeview.js draws and sends), so web/e2e/worktreeunits.mjs checks
// all of it under Node.

/** ISOLATED_KEY is the localStorage key of the per-workspace "isolated" choices. */
export const ISOLATED_KEY = 'ferry.isolated';

/** MAX_COPIES is the most sessions one best of N starts. */
export const MAX_COPIES = 4;

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** workspaceKey names a workspace across machines. */
export function workspaceKey(machineId, workspaceId) {
  return `${machineId}/${workspaceId}`;
}

function readChoices(storage) {
  try {
    const v = JSON.parse(storage?.getItem(ISOLATED_KEY) || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** isolatedChoice is whether the user last started isolated in the workspace key. */
export function isolatedChoice(storage, key) {
  return readChoices(storage)[key] === true;
}

/**
 * rememberIsolated keeps the choice for the workspace key; false is
 * forgotten (the default), so the map only holds workspaces that are on.
 * A full or missing storage keeps nothing, silently: it is a preference.
 */
export function rememberIsolated(storage, key, on) {
  const m = readChoices(storage);
  if (on) m[key] = true;
  else delete m[key];
  try {
    storage?.setItem(ISOLATED_KEY, JSON.stringify(m));
  } catch {
    // private mode or full: the choice lasts for this page only
  }
}

/**
 * startPayloads are the ui.session.start payloads of one start from the
 * new-session form: one for a plain or isolated session, n for a best of
 * n, each with its copy's agent (default: base's) and the same isolation
 * (base branch, group). base: the form's payload; iso: {base} or null;
 * copies: [{adapter, model}] for copies 2..n; group: the best-of-N group
 * id (a UUID) when n > 1. A title is numbered per copy so the lists and
 * the worktree names tell them apart.
 */
export function startPayloads(base, iso, n = 1, copies = [], group = '') {
  if (!iso) return [{ ...base }];
  const count = Math.max(1, Math.min(MAX_COPIES, Math.trunc(n) || 1));
  const out = [];
  for (let i = 0; i < count; i++) {
    const c = i === 0 ? {} : copies[i - 1] || {};
    const p = { ...base, adapter: c.adapter || base.adapter };
    const isolation = {};
    if (iso.base) isolation.base = iso.base;
    if (count > 1) isolation.group = group;
    p.isolation = isolation;
    if (count > 1 && base.title) p.title = `${base.title} (${i + 1} of ${count})`;
    out.push(p);
  }
  return out;
}

/**
 * branchLine is what a session row says of an isolated session's branch:
 * the branch, its size ("+12 −3", spoken "12 lines added, 3 removed"),
 * ahead/behind ("↑2 ↓1", spoken "2 commits ahead of main, 1 behind") and
 * its badges ("setup failed", "folder missing", "shipped", "tests
 * failed"). null for a session that is not isolated.
 */
export function branchLine(wt) {
  if (!wt) return null;
  const added = wt.added || 0;
  const removed = wt.removed || 0;
  const ahead = wt.ahead || 0;
  const behind = wt.behind || 0;
  const base = wt.base || 'its base';
  const badges = [];
  if (wt.missing) badges.push({ kind: 'danger', text: 'folder missing' });
  if (wt.setup === 'failed') badges.push({ kind: 'danger', text: 'setup failed' });
  else if (wt.setup === 'running') badges.push({ kind: 'info', text: 'setting up' });
  if (wt.test === 'failed') badges.push({ kind: 'danger', text: 'tests failed' });
  else if (wt.test === 'passed') badges.push({ kind: 'ok', text: 'tests passed' });
  if (wt.shipped?.merged && !wt.unshipped) badges.push({ kind: 'ok', text: 'merged' });
  else if (wt.shipped?.pushed && !wt.unshipped) badges.push({ kind: 'ok', text: 'pushed' });
  const sizeSaid = `${plural(added, 'line')} added, ${removed} removed`;
  const abSaid = `${plural(ahead, 'commit')} ahead of ${base}, ${behind} behind`;
  return {
    branch: wt.branch || `ferry/${wt.name || ''}`,
    size: `+${added} −${removed}`,
    sizeSaid,
    aheadBehind: `↑${ahead} ↓${behind}`,
    aheadBehindSaid: abSaid,
    badges,
    label: `Branch ${wt.branch || wt.name}: ${sizeSaid}; ${abSaid}${wt.uncommitted ? '; uncommitted changes' : ''}${badges.length ? `; ${badges.map((b) => b.text).join(', ')}` : ''}`,
  };
}

/**
 * parsePatch turns a file's unified patch (git's, headers included) into
 * the diff object diff.js draws: {path, hunks: [{old_start, old_lines,
 * new_start, new_lines, lines: [{op, text}]}], is_new_file, truncated}.
 * A cut patch may end mid-hunk: what is there is kept. "\ No newline at
 * end of file" lines are not lines of the file and are dropped.
 */
export function parsePatch(f) {
  const hunks = [];
  let cur = null;
  const text = String(f.patch || '');
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  for (const l of lines) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(l);
    if (m) {
      cur = {
        old_start: Number(m[1]), old_lines: m[2] === undefined ? 1 : Number(m[2]),
        new_start: Number(m[3]), new_lines: m[4] === undefined ? 1 : Number(m[4]), lines: [],
      };
      hunks.push(cur);
      continue;
    }
    if (!cur) continue; // the headers (diff --git, index, ---, +++)
    if (l.startsWith('\\')) continue;
    const c = l[0];
    if (c === '+') cur.lines.push({ op: 'add', text: l.slice(1) });
    else if (c === '-') cur.lines.push({ op: 'delete', text: l.slice(1) });
    else if (c === ' ' || l === '') cur.lines.push({ op: 'context', text: l.slice(1) });
  }
  return { path: f.path, hunks, is_new_file: f.status === 'added', truncated: !!f.truncated };
}

const STATUS_WORD = {
  added: 'new file', deleted: 'deleted', renamed: 'renamed', copied: 'copied', type_changed: 'type changed', typechange: 'type changed', modified: '',
};

/**
 * fileNote is what a branch diff's file says besides its diff: its status
 * ("new file", "renamed from a.go"), and that it is binary or cut.
 */
export function fileNote(f) {
  const out = [];
  const w = STATUS_WORD[f.status] ?? '';
  if ((f.status === 'renamed' || f.status === 'copied') && f.old_path) out.push(`${w} from ${f.old_path}`);
  else if (w) out.push(w);
  if (f.binary) out.push('binary: no text diff to show');
  else if (f.truncated) out.push('the diff is cut here to keep the message small');
  return out;
}

/** removedOf is a FileDiff's or a Worktree's removed lines (the git layer says deleted). */
export function removedOf(x) {
  return x?.removed ?? x?.deleted ?? 0;
}

/** STRATEGIES are the ship sheet's merge strategies, in its order (squash first: the default). */
export const STRATEGIES = [
  { value: 'squash', label: 'Squash into one commit', hint: 'one commit on the base, with the message below' },
  { value: 'ff', label: 'Fast-forward', hint: 'the branch\'s commits as they are; refused when the base moved on' },
  { value: 'merge', label: 'Merge commit', hint: 'the branch\'s commits and a merge commit' },
  { value: 'none', label: 'Do not merge', hint: 'commit on the branch only (then push it, or open a pull request)' },
];

/** shipPayload is control.worktree.ship's payload from the ship sheet's choices. */
export function shipPayload({ message = '', strategy = 'squash', push = false, pullRequest = false, remote = '' }) {
  const p = { strategy: STRATEGIES.some((s) => s.value === strategy) ? strategy : 'squash' };
  const m = String(message).trim();
  if (m) p.message = m;
  if (push || pullRequest) p.push = true;
  if (pullRequest) p.pull_request = true;
  if (remote.trim()) p.remote = remote.trim();
  return p;
}

/**
 * shipProblem is what is wrong with the ship sheet's choices before
 * anything is sent ('' when nothing): a message is needed when there is
 * something to commit, at most 64 KiB.
 */
export function shipProblem(p, wt) {
  if (wt?.uncommitted && !p.message) return 'Write a commit message: the branch has uncommitted changes to commit.';
  if (p.message && new TextEncoder().encode(p.message).length > 64 * 1024) return 'A commit message has at most 64 KiB.';
  if (p.strategy === 'none' && !p.push) return 'Nothing would happen: pick a merge, or push the branch.';
  return '';
}

/**
 * shipOutcome is what a successful ship says, one line per thing done,
 * and its links (pull request, or the forge's compare page).
 */
export function shipOutcome(r, wt) {
  const base = wt?.base || 'the base branch';
  const branch = wt?.branch || 'the branch';
  const lines = [];
  // A commit the merge itself made is said once, with the merge.
  if (r.commit && r.commit !== r.merge_commit) lines.push(`Committed ${r.commit.slice(0, 10)} on ${branch}.`);
  if (r.merged) {
    const how = { squash: 'Squash-merged', ff: 'Fast-forwarded', merge: 'Merged' }[r.strategy] || 'Merged';
    lines.push(`${how} into ${base}${r.merge_commit ? ` (${r.merge_commit.slice(0, 10)})` : ''}.`);
  }
  if (r.pushed) lines.push(`Pushed ${branch} to ${r.remote || 'the remote'}.`);
  const links = [];
  if (r.pr_url) links.push({ href: r.pr_url, text: 'Open the pull request' });
  else if (r.compare_url) links.push({ href: r.compare_url, text: 'Open a pull request on the forge' });
  if (!lines.length && !links.length) lines.push('Nothing to ship: the branch had nothing new.');
  return { lines, links };
}

/**
 * SHIP_HELP says what to do after a refused ship (or update), by code;
 * {base} and {branch} are the session's.
 */
const SHIP_HELP = {
  base_dirty: 'Commit or stash your own changes in your checkout of {base} (the files are listed), then ship again.',
  merge_conflict: 'Ask the agent to resolve the conflict: it merges {base} into {branch} and is told which files conflict. Or ship with "Do not merge" and resolve it yourself.',
  not_fast_forward: '{base} moved on since the branch left it: pick Squash or Merge commit, or update the branch first.',
  nothing_to_merge: 'Nothing to merge: {base} already has everything on {branch}.',
  nothing_to_commit: 'There is nothing to commit: the agent changed no file.',
  push_rejected: 'The remote refused the push (its branch moved on, or you may not push there): pull or pick another remote, then push again.',
  remote_not_found: 'The workspace has no such remote: add it with git remote add, or leave the remote empty for origin.',
  forge_auth: 'The forge refused the token: give the machine a valid one (ferry up or connect --forge-token-file, or $FERRY_FORGE_TOKEN).',
  forge_error: 'The forge did not open the pull request: open it yourself from the branch, which was pushed.',
  base_not_found: 'The base branch {base} is gone: recreate it, then ship again.',
  worktree_missing: 'The session\'s worktree folder was removed: nothing can be shipped from it.',
  not_isolated: 'This session works in the workspace itself: there is no branch to ship.',
  busy: 'The agent is working: wait for the turn to end (or stop it), then ship.',
  client_offline: 'The session\'s machine is offline: ship once it is back.',
  machine_offline: 'The session\'s machine is offline: try again once it is back.',
  uncommitted_changes: 'The branch has uncommitted changes: write a commit message so they are committed first.',
  git_failed: 'git failed on the session\'s machine: the message says which step; check that git is installed there.',
  connection_lost: 'Not connected to the master: ship once the connection is back.',
};

/** shipHelp is what to do after a refusal with code ('' when nothing is known). */
export function shipHelp(code, wt) {
  const t = SHIP_HELP[code];
  if (!t) return '';
  return t.replaceAll('{base}', wt?.base || 'the base branch').replaceAll('{branch}', wt?.branch || 'the branch');
}

/**
 * conflictPrompt is the prompt that asks the session's agent to resolve a
 * conflict, naming the files (the master merged the base in and left
 * conflict markers in them).
 */
export function conflictPrompt(files, base) {
  const list = (files || []).filter(Boolean);
  return `Resolve the merge conflicts in: ${list.join(', ')}. The base branch ${base || ''} was merged into this branch and those files hold conflict markers (<<<<<<<, =======, >>>>>>>). Keep both sides' intent, remove every marker, and make sure the code still builds.`.replace(/ {2,}/g, ' ');
}

/**
 * unshippedLoss is what archiving or deleting an isolated session with
 * unshipped changes loses: its worktree folder and the changes in it that
 * are not in its base. The branch stays unless deleteBranch, and then its
 * commits go too (a commit reachable from nothing else).
 */
export function unshippedLoss(wt, deleteBranch = false) {
  const parts = [];
  if (wt.uncommitted) parts.push('uncommitted changes in its worktree');
  if (wt.ahead) parts.push(`${plural(wt.ahead, 'commit')} not in ${wt.base || 'its base'}`);
  const size = `${plural(wt.files || 0, 'file')} changed, +${wt.added || 0} −${removedOf(wt)}`;
  const what = `${parts.length ? parts.join(' and ') : 'changes not in its base'} (${size})`;
  const keeps = wt.ahead ? `the branch ${wt.branch} keeps its ${plural(wt.ahead, 'commit')}` : `the branch ${wt.branch} stays`;
  let lost;
  if (deleteBranch) lost = `all of it, and the branch ${wt.branch}`;
  else if (wt.uncommitted) lost = `the uncommitted changes; ${keeps}`;
  else lost = `nothing for good: ${keeps}`;
  return { what, lost };
}

/**
 * groupOf lists the sessions of best-of-N group, oldest first (the order
 * they were started in).
 */
export function groupOf(sessions, group) {
  if (!group) return [];
  return sessions.filter((s) => s.worktree?.group === group)
    .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : 1));
}

/**
 * usageOf is a session's tokens and cost for the compare view: the
 * session's usage totals when the master lists them (SessionInfo.usage),
 * else what its loaded history adds up to (SessionState.totals), else null.
 */
export function usageOf(info, totals) {
  const u = info?.usage;
  if (u && (u.input_tokens || u.output_tokens || typeof u.cost_usd === 'number')) {
    return { tokens: (u.input_tokens || 0) + (u.output_tokens || 0), cost: typeof u.cost_usd === 'number' ? u.cost_usd : null };
  }
  if (totals?.turns) return { tokens: totals.input + totals.output, cost: totals.hasCost ? totals.cost : null };
  return null;
}
