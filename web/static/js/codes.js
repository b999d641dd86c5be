// Names for the error codes the UI shows, so a row says "denied" and a
// line of what it means instead of a bare "code 15". The sets mirror
// protocol/errors.go (protocol errors), protocol/agent.go (agent.error
// codes) and docs/tools.md (the file tools' numeric codes); web/units_test.go
// fails when one of them gains a code this file does not name.

/** TOOL_CODES: the tools' numeric error_code → [name, what it means]. */
export const TOOL_CODES = {
  1: ['invalid input', 'the input does not match the tool\'s schema'],
  2: ['not read', 'the file was not read (whole) in this session before the change'],
  3: ['stale', 'the file changed since it was read'],
  4: ['not found', 'no such file or directory'],
  5: ['outside', 'the path leaves the workspace and the allowed roots'],
  6: ['not regular', 'a device, FIFO, socket or other special file'],
  7: ['is a directory', 'a directory where a file was wanted'],
  8: ['too large', 'over the read limit; read a range'],
  9: ['ambiguous', 'the text to replace matches more than once'],
  10: ['no match', 'the text to replace is not in the file'],
  11: ['no change', 'the edit changes nothing'],
  12: ['permission', 'the file is read-only, or the system refused'],
  13: ['encoding', 'binary or undecodable, or the edit cannot keep the bytes exact'],
  14: ['bad pages', 'an invalid PDF page range'],
  15: ['denied', 'you, a permission rule or the mode refused the call'],
  16: ['exists', 'the file already has content'],
  17: ['bad pattern', 'an invalid glob or regular expression'],
  18: ['timed out', 'the command ran past its time limit and was stopped'],
  19: ['hard linked', 'the file has other hard links and is left untouched'],
  20: ['MCP', 'an MCP server\'s tool reported an error, or its server is unreachable or exited'],
  21: ['editor', 'the editor lending its files or terminals failed the request'],
  22: ['overlap', 'two edits of one MultiEdit change the same text'],
  23: ['no cell', 'the notebook has no cell with that id'],
  24: ['web', 'the page could not be fetched: a non-public host, an HTTP error or an unreachable server'],
  99: ['internal', 'the tool failed for a reason of its own (see the log)'],
};

/** CODES: the string codes of protocol errors and agent.error → human line. */
export const CODES = {
  // protocol/errors.go
  malformed_json: 'the message is not one JSON object',
  message_too_large: 'the message is larger than the limit',
  unknown_type: 'the message type is not known to this version',
  missing_field: 'a required field is missing',
  wrong_type: 'a field has the wrong type',
  invalid_value: 'a field has a value that is not allowed',
  wrong_direction: 'this side may not send that message',
  unsupported: 'the machine does not offer this',
  unauthorized: 'the sign-in is missing, wrong or revoked',
  not_found: 'the session, machine, workspace or agent does not exist',
  client_offline: 'the machine stayed away too long; nothing was delivered',
  interaction_settled: 'the question was already answered',
  busy: 'the session is already running a turn',
  slow_consumer: 'the connection read too slowly and was dropped',
  archived: 'the session is archived; unarchive it to prompt it',
  internal: 'it failed for a reason of its own (see the log)',
  file_changed: 'a file changed since the agent wrote it; undo would lose that change',
  // protocol/worktree.go (isolated sessions, docs/worktrees.md)
  not_a_git_repository: 'the workspace is not a git repository, so it cannot be isolated',
  detached_head: 'the workspace\'s checkout is on no branch (a detached HEAD); check out a branch or name a base',
  base_not_found: 'the base branch does not exist',
  branch_exists: 'a branch of that name already exists',
  base_dirty: 'your checkout of the base branch has uncommitted changes the merge would touch',
  merge_conflict: 'the branch and its base changed the same lines',
  push_rejected: 'the remote refused the push',
  remote_not_found: 'the workspace has no such remote',
  nothing_to_commit: 'there is nothing to commit',
  nothing_to_merge: 'the branch has nothing its base lacks',
  not_fast_forward: 'the base moved on: the branch cannot be fast-forwarded into it',
  setup_failed: 'the workspace\'s .ferry/setup script failed in the new worktree',
  worktree_missing: 'the session\'s worktree folder was removed',
  unshipped_changes: 'the session has changes that are not in its base branch',
  forge_auth: 'the forge refused the token',
  forge_error: 'the forge refused or failed the request',
  not_isolated: 'the session has no worktree of its own',
  uncommitted_changes: 'the worktree has uncommitted changes; commit them first',
  git_failed: 'git is missing, too old, or one of its steps failed',
  machine_offline: 'the session\'s machine is offline; try again when it is back',
  // protocol/agent.go
  bad_request: 'the prompt cannot be used as it is',
  structured_output_invalid: 'the answer did not match the requested JSON schema',
  provider_rate_limited: 'the model provider is rate limiting',
  provider_overloaded: 'the model provider is overloaded',
  provider_server_error: 'the model provider had a server error',
  provider_unavailable: 'the model provider is unavailable',
  provider_auth: 'the model provider refused the credentials',
  provider_bad_request: 'the model provider refused the request',
  provider_stream: 'the model provider\'s stream broke',
  provider_network: 'the model provider could not be reached',
  budget_exceeded: 'the agent stopped at its spending limit',
  structured_output_failed: 'the agent could not answer in the requested JSON schema',
  agent_error: 'the agent reported a failure',
  agent_exited: 'the agent\'s process ended; later turns fail the same way',
  agent_crashed: 'the agent\'s process ended during the turn; the next prompt starts it again',
  agent_unavailable: 'the agent could not be started',
  agent_auth_required: 'the agent wants you to log in',
  session_not_resumed: 'the agent could not resume the earlier conversation and starts a new one',
  mcp_server_failed: 'an MCP server of the session could not be used (failed to start, went away, or its configuration is wrong or not approved); the turn goes on without its tools',
  agent_failed: 'the agent failed without saying why',
  compaction_failed: 'the agent could not compact the session',
  restarted: 'ferry on the session\'s machine (ferry up or ferry connect) stopped during the turn, which ended there; the machine itself need not have restarted',
  script_exit_status: 'the script exited with an error',
  script_killed: 'the script was killed',
  script_start_failed: 'the script could not be started',
  // made up by the UI itself
  connection_lost: 'the connection to the master was lost',
  timeout: 'the master did not answer in time',
  cancelled: 'it was stopped',
};

/**
 * toolErrorText is the line under a failed tool: the code's name and what
 * it means ("denied: you, a permission rule or …"); the number is for
 * support, in the line's title (toolErrorCode).
 */
export function toolErrorText(n) {
  const c = TOOL_CODES[n];
  return c ? `${c[0]}: ${c[1]}` : 'the tool failed';
}

/** toolErrorCode is a tool's error code as support reads it ("tool error code 15"). */
export function toolErrorCode(n) {
  return `tool error code ${n}`;
}

/** codeName is a string code as words ("agent_crashed" → "agent crashed"). */
export function codeName(code) {
  return String(code || '').replaceAll('_', ' ');
}

/**
 * codeLine is what a string code means, or '' for a code not known here;
 * ctx.machine (the session's machine's name) makes a restart's line name
 * it: ferry's client restarted there, which need not be the machine.
 */
export function codeLine(code, ctx = {}) {
  if (code === 'restarted' && ctx.machine) {
    return `ferry on the machine “${ctx.machine}” (ferry up or ferry connect) stopped during the turn, which ended there; the machine itself need not have restarted`;
  }
  return CODES[code] || '';
}

/**
 * namedToolOutput puts the code's name into a tool's error output: the
 * tools write "Error (code 15): …" for the agent, which reads the number;
 * a person reads "Error: denied (code 15): …".
 */
export function namedToolOutput(output) {
  return String(output).replace(/^Error \(code (\d+)\):/, (all, n) => (TOOL_CODES[n] ? `Error: ${TOOL_CODES[n][0]} (code ${n}):` : all));
}

/**
 * errorNote is how a coded error reads: its message, then what its code
 * means when that adds to it — "claude exited with status 1 (the agent's
 * process ended; …)" — never the code's identifier, which the caller
 * keeps for support in a title. A restart reads as what restarted (see
 * codeLine; ctx.machine names the machine) and what to do.
 */
export function errorNote(e, ctx = {}) {
  const line = codeLine(e?.code, ctx);
  if (e?.code === 'restarted') return `${line[0].toUpperCase()}${line.slice(1)}. Send a new prompt to go on.`;
  const msg = e?.message || line;
  if (!msg) return e?.code ? 'it failed for a reason this page does not know' : '';
  return line && line !== msg && !msg.includes(line) ? `${msg} (${line})` : msg;
}
