// What agent.files.restored means for the session state (undo and rewind,
// history.js): pure, so the state and its unit checks can use it without a
// browser.

/** restoredText says what an agent.files.restored put back. */
export function restoredText(p) {
  const files = p.files || [];
  const list = files.map((f) => (f.deleted ? `${f.path} (deleted: the agent had created it)` : f.path)).join(', ');
  const what = files.length ? `restored ${list}` : 'no file needed restoring';
  switch (p.kind) {
    case 'rewind': {
      const conv = p.conversation === 'rewound'
        ? "The agent's conversation was rewound too: its prompt is back in the box to edit and resend."
        : (p.conversation_note || "The agent's conversation was not rewound.");
      return `Rewound files to before the turn: ${what}. ${conv}`;
    }
    case 'file':
      return `Undid the agent's changes to ${p.path}: ${what}.`;
    default:
      return `Undid the edit: ${what}.`;
  }
}

/**
 * applyRestored folds agent.files.restored into the session state: undone
 * edits are marked on their cards, rewound turns are marked, and a note
 * says what was restored.
 */
export function applyRestored(s, msg) {
  const p = msg.payload || {};
  const paths = new Set((p.files || []).map((f) => f.path));
  const mark = (t, tool) => {
    tool.undone = true;
    tool.undoError = '';
    s.bumpTool(t, tool);
  };
  let from = false;
  for (const t of s.turns.values()) {
    if (p.kind === 'rewind' && t.id === p.turn_id) from = true;
    if (p.kind === 'rewind' && from) {
      t.rewound = p.conversation === 'rewound';
      t.rewindError = '';
      t.filesRewound = true;
      s.touch(t.key);
    }
    for (const tool of t.tools.values()) {
      if (!tool.diff || tool.undone) continue;
      if ((p.kind === 'undo' && tool.id === p.tool_use_id)
        || (p.kind === 'file' && tool.diff.path === p.path)
        || (p.kind === 'rewind' && from && paths.has(tool.diff.path))) mark(t, tool);
    }
  }
  s.addNote('restore', restoredText(p));
}
