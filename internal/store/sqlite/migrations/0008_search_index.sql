-- Search reads only prompts and final answers (sqlbody's searchedTypes), so
-- only those are indexed by type: the stream of other events (text deltas,
-- tool calls) no longer maintains an index entry on every append and every
-- trim. The search query repeats this WHERE term word for word, which is
-- what lets the planner use a partial index.
DROP INDEX events_by_type;
CREATE INDEX events_searched ON events (session_id, type)
	WHERE type IN ('control.prompt.request', 'agent.text.done');
