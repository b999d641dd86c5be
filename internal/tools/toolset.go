package tools

// FileTools returns the file tools in the order agents are shown them. The
// set of names is what per-workspace isolation and the artifact decorators
// key on, so they stay in lockstep with this list.
func FileTools() []Tool {
	return []Tool{Read{}, Write{}, Edit{}, MultiEdit{}, NotebookEdit{}, Glob{}, Grep{}}
}

// FileToolNames lists the names of FileTools.
func FileToolNames() []string {
	ts := FileTools()
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name()
	}
	return names
}

// AllTools returns every tool of ferry's own agent: the file tools, Bash,
// WebFetch and TodoWrite.
func AllTools() []Tool {
	return append(FileTools(), Bash{}, WebFetch{}, TodoWrite{})
}
