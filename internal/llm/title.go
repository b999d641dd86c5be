package llm

// TitleSystem is the system prompt of a session-title request: ferry's
// agent sends it, with one user message and no tools, to ask the model for
// a short title of a session's first exchange. A normal turn never sends
// it, so a test double of a provider (internal/llm/fake) recognises a title
// request by it and can answer it apart from a test's script.
const TitleSystem = "You name conversations between a person and a coding agent. " +
	"Answer with a title of at most six words that says what the conversation is about: " +
	"no quotes, no Markdown, no final punctuation, nothing else."
