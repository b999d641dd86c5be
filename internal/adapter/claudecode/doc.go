// Package claudecode is the adapter that drives Claude Code (the claude CLI)
// through ferry's agent.* / control.* contract.
//
// One CLI process serves a ferry session across its turns:
//
//	claude -p --input-format stream-json --output-format stream-json --verbose
//	       --include-partial-messages --permission-prompt-tool stdio
//	       --permission-mode default|plan [--max-turns N] [--allowedTools=…]
//	       [--disallowedTools=…] [--json-schema=…] [--resume=ID] [Config.Args…]
//
// started at the first prompt in the workspace, in a process group of its
// own, and spoken to with Claude Code's stream-json and control protocol
// over stdio (one writer goroutine on stdin, one reader on stdout, one on
// stderr). A prompt is one stream-json user message; the turn ends with the
// CLI's result line. Keeping the process (rather than one per turn with
// --resume) keeps Claude Code's in-memory state, such as which files it has
// read, and its prompt cache, and saves a start per turn; a prompt whose
// per-prompt flags differ from the running process's restarts it with
// --resume, as does a turn after a crash or a kill.
//
// What the package guarantees:
//
//   - Prompt settings: max_turns, allowed_tools, denied_tools and
//     json_schema become the CLI's flags (denied_tools is also enforced by
//     ferry's PreToolUse hook); output_format is rendered by ferry.
//     Attached context_files (adapter.Turn.Attachments) make the prompt's
//     user message a list of content blocks in the Anthropic format the CLI
//     passes to the model: the text, then each image as an image block and
//     each PDF as a document block (base64 sources), each text file as a
//     text block naming it; a line before the files states their intent
//     (which to edit, which are reference: agent.AttachedIntents). A
//     compaction's target_token_ratio and a mode switch's config are
//     refused with code unsupported naming them.
//   - Input types: text and slash_command (Claude Code's own commands) go
//     as typed; piped_stdin is framed as material the user piped, not as
//     the instruction; continuation asks to continue where it left off. A
//     slash command's settings are the CLI's flags as a prompt's are;
//     attached files are refused on one (unsupported), since the CLI runs
//     a command only from a prompt of plain text.
//   - File tokens become Claude Code mentions (fileref.Prompt.Mentions:
//     "@path" or `@"path"`); a token that cannot be written as a mention is
//     written as its display path, never dropped.
//   - The stream maps to events in order: text and thinking deltas (from
//     the partial-message events, or from whole messages when those did not
//     stream) become agent.text.delta (channel text or thinking, in pieces
//     of at most 256 KiB); tool_use blocks agent.tool.started; tool_result
//     blocks agent.tool.finished (ok, error, denied — ferry or the user
//     refused it — or cancelled, with the diff Claude Code reports for Edit
//     and Write, and the images of its content, as a Read of a PNG has them,
//     where protocol.AppendToolImage lets the event carry them); the result line agent.usage, with the turn's cost from
//     the CLI's total_cost_usd. A subagent's tool calls are shown, with
//     parent_tool_use_id naming its Task call; its text is not. An automatic compaction is reported as agent.compaction.done.
//   - Artifacts (SessionConfig.Artifacts on): each Write, Edit, MultiEdit
//     or NotebookEdit call whose tool_result is not an error hands over the
//     file it names, registered from disk (artifact.Register), as
//     agent.artifact with the call's tool_use id and in Result.Artifacts; a
//     file that cannot be (outside the workspace) is logged and skipped.
//   - Permission requests (can_use_tool) become agent.interaction.request:
//     kind permission (allow once, allow always — Claude Code's suggested
//     rules, kept to the session — or deny; with the proposed diff for Edit
//     and Write), and AskUserQuestion's questions become single_select,
//     multi_select or text_input interactions whose answers go back as the
//     tool's updated input. A nil answer (timeout) denies; a cancelled turn
//     denies what is still open.
//   - Modes are enforced by ferry, not left to the agent: plan and review
//     start Claude Code in its plan mode (set_permission_mode switches a
//     running one), and every tool call passes a PreToolUse hook that ferry
//     registers at initialize and answers with permission.ModeAllows, so a
//     call the mode forbids is refused before it runs whatever Claude
//     Code's own settings allow; can_use_tool checks again, also after the
//     user answered.
//   - Cancel: Run sends an interrupt control request and returns within
//     cancelWait (200 ms). A turn that has not ended by then settles in the
//     background; after cancelGrace its process is killed with everything
//     it started (Bash commands run in sessions of their own, so the tree
//     is read from /proc before the kill). The next turn waits for the
//     settling and, when the process is gone, resumes the conversation.
//   - Titles (SessionConfig.Title set): after the session's first turn
//     that ends with an answer, Claude Code is asked once, with the Agent
//     SDK's generate_session_title control request (the first typed or
//     piped prompt, cut to 4 KB, not persisted in Claude Code), for a
//     title of the session, which goes to SessionConfig.Title, as does
//     one the CLI reports itself (session_title_changed). The request
//     runs beside the next turns, bounded by titleTimeout (30 s) and by
//     the process's end: a failure, a null title or a slow answer costs
//     only the title, and the log says why. A session that resumes a
//     conversation is not titled again.
//   - Compaction sends "/compact [instruction]" and reports the token
//     counts of Claude Code's compact_boundary line; a failure (nothing to
//     compact) is an error.
//   - The Claude session id is persisted per ferry session under
//     Config.StateDir/sessions (written atomically), and a new
//     Adapter resumes the conversation with --resume. If Claude Code no
//     longer has it, the session says so (agent.error session_not_resumed)
//     and goes on in a new conversation.
//   - Robust reading: lines of any size up to 128 MiB are parsed (a 64 MiB
//     line is fine; larger ones are skipped and logged); a malformed line is
//     logged and skipped; a CLI that exits mid-turn ends the turn with a
//     coded agent.error (agent_crashed) and stop reason error; stderr goes to
//     the logger, boundedly. Claude Code's own error text stays in the log.
package claudecode
