// Package client is the local daemon (ferry connect): it dials the master
// (it never listens), announces its machine, workspaces and capabilities,
// and runs the sessions the master opens on it through their adapters.
//
// Guarantees:
//
//   - Outbound only. The client dials <master>/v1/client with its token
//     (Authorization: Bearer) and reconnects after any transient failure
//     with exponential backoff and jitter (never faster than half the
//     current ceiling; the backoff starts over only after a connection
//     that stayed registered for StableAfter), until its context is done.
//     A master node that drains closes with 1012 (service restart): the
//     client reconnects after the least delay (MinBackoff/2 to MinBackoff),
//     whatever the backoff had grown to.
//     A refusal that retrying cannot fix ends Run instead: ErrUnauthorized
//     for a refused token (HTTP 401, or closed because it was revoked),
//     ErrMachineTaken for a machine registered with another valid token.
//   - Registration first. On every connection the first message is
//     session.capabilities; then every message still in the outbox, oldest
//     first; then live traffic.
//   - Nothing produced is lost. Every agent.* event and session.opened is
//     written to an on-disk outbox (a SQLite file in the state directory)
//     before it is sent, and leaves it only when the master acknowledges it
//     (master.ack, cumulative). A reconnect or a restart re-sends what is
//     still unacknowledged, with the same message ids, so the master can
//     drop duplicates. The outbox is bounded: when it is full, producers
//     (the adapters' Emit) block until an ack makes room; nothing is
//     dropped. session.file.candidates, session.capabilities and error are
//     answers to the connection at hand and are not kept.
//   - Each prompt is answered once (prompts.go). The master sends a
//     control.prompt.request again until the client answers it, so a
//     copy may come, also after a restart. The client records each
//     prompt's message_id as it answers it (in the transaction that
//     queues its agent.turn.started, or with its refusal; the newest 4096)
//     and answers a copy as the first time: dropped when it started a
//     turn, refused again with the same error when it was refused. It
//     declares this in session.capabilities (prompts_once).
//   - Sessions outlive connections. A turn that runs when the connection
//     drops keeps running; its events wait in the outbox.
//   - Turns do not outlive the process, but their end does: a turn cut by
//     the client stopping, or by a kill or crash (found at the next start
//     from its mark in the outbox's database), ends with agent.error
//     CodeRestarted ("ferry restarted during this turn") and stop_reason
//     "error", never "cancelled". Adapters get transcripts.db in
//     SessionConfig.Transcripts, so ferry's agent goes on with its
//     conversation after a restart.
//   - Every turn ends with exactly one agent.text.done, sent by the client
//     (not the adapter): is_cancelled and stop_reason "cancelled" when
//     control.prompt.cancel stopped it, stop_reason "error" after
//     an agent.error when the adapter failed. The adapter's own error text
//     stays in the log.
//   - Bad input never kills the connection: every frame is decoded strictly
//     (protocol.DecodeFrom with the master's role) and a bad one is
//     answered with a coded error. A frame over protocol.MaxMessageBytes
//     is the exception: the WebSocket library closes the connection
//     (status 1009) and the client reconnects.
//   - Dead peers are noticed: the client pings every PingInterval and drops
//     a connection whose pong does not come within one more interval.
//   - References stay inside: the adapter is handed only the files a prompt
//     references that lie in the session's workspace, its enclosing
//     repository (what a project-scope search offers) or the workspace of
//     the client a reference's workspace_id names (global scope: the agent
//     gets that file's absolute path). Any other reference's token reaches
//     the agent as its display path, as plain text (§16.3), and the prompt
//     runs: the path is never opened, linked or listed for the agent.
//   - A session is held to what its agent really offers: the adapter's
//     declaration, or, once the session's agent said (an ACP agent's
//     modes, prompt capabilities, commands:
//     adapter.SessionConfig.Capabilities), that, which goes to the master
//     as agent.capabilities before session.opened and again when it
//     changes. Modes, compaction, input types and attachments are checked
//     against it; a session cannot open in a mode it lacks.
//   - Attachments are had before the turn starts: a prompt's context_files
//     (for an adapter that declares the setting) are fetched and checked
//     by attachment.Fetcher (uploads from the master with their grant,
//     data: URLs decoded, other https URLs only with
//     Config.FetchAttachmentURLs and never from a non-public address),
//     then vetted by the session when it is an adapter.AttachmentChecker.
//     Any failure answers the prompt with a coded error naming the file,
//     and no agent.turn.started is sent.
//   - Downloads read only what an agent handed over. Every agent.artifact
//     a session's adapter emits is recorded (artifact_id → workspace and
//     path, in artifacts.db in the state directory) before it is sent; a
//     download names a session and an artifact_id, never a path, and is
//     served only for an artifact that session recorded, after resolving
//     its real path, through an os.Root on the workspace (nothing outside
//     it is ever opened, a symlink swapped in later included), and only
//     for a regular file. What is served is the snapshot of the content
//     taken when it was recorded (snapshots.go), else the file on disk
//     with a single link, marked changed_since when it is no longer the
//     registered version. Data goes out in binary frames within the
//     master's credit window: at most one window per download is in
//     memory, at most 32 downloads run at once, and a download ends when
//     the master cancels it or its connection drops.
//   - Every file change a session's agent makes is recorded in the
//     session's file history (history.go: a filehistory.Journal in
//     history/<session>/ of the state directory, bounded by HistoryQuota),
//     and control.history.* undo one change, every change to a file, or
//     everything since a turn: all or nothing, refused with file_changed
//     naming the file when one changed since the agent's edit (or is now
//     reached through a symbolic link, or is another file than the one the
//     agent left), written through the session's confined vfs.
//   - The state directory is private: every file the client keeps there
//     (its SQLite files and their -wal and -shm included, from the moment
//     they exist, whatever the umask: internal/sqlitefile) is 0600 and
//     every folder it creates 0700. A state directory the user made keeps
//     its own mode; a file an older ferry left looser is tightened when
//     opened.
//   - An isolated session (control.session.open with isolation,
//     isolated.go) runs in a git worktree of its own on branch ferry/NAME
//     under StateDir/worktrees, never in the user's checkout: its
//     workspace, search index, file history, artifacts and Bash folder
//     are the worktree's. A refused isolated open (not a repository, a
//     detached HEAD, a missing base, a taken name) is coded and leaves
//     no branch, folder or binding. A worktree whose folder is gone is
//     reported missing and never made again silently (worktree_missing).
//     Git's and ferry's worktree records are pruned at every start. The
//     forge token (Config.ForgeToken) goes to the forge's API only.
//   - What sessions keep is bounded across sessions and over time
//     (prune.go): at start and every PruneInterval, histories and
//     transcripts not written for 90 days are dropped (so are the artifact
//     records and snapshots of sessions idle that long), and the histories
//     together stay under HistoryTotal (least recently written dropped
//     first, never a session open in this client).
//
// # Dispatch
//
// One reader goroutine per connection decodes frames and handles what must
// not wait: master.ack, control.prompt.cancel, control.file.search and its
// cancel, and the control.artifact.* messages (a download runs on its own
// goroutine). Everything else for a session (open, prompt, interaction answers,
// mode switch, compaction) goes, in order, to the session's own worker
// goroutine through a bounded queue, so a slow adapter or a full outbox never
// stalls the reader (which must keep reading acks to make room). A turn runs
// in its own goroutine. A control.prompt.cancel naming a turn that is not
// running (it may have just ended) is ignored: the turn's agent.text.done
// already says how it ended.
package client
