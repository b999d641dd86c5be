package protocol

// applyDefaults fills the specification's defaults into a decoded payload.
// It is the only place defaults live, so every receiver sees the same values.
func applyDefaults(payload any) {
	switch p := payload.(type) {
	case *PromptRequest:
		if p.InputType == "" {
			p.InputType = InputText
		}
	case *UIPrompt:
		if p.InputType == "" {
			p.InputType = InputText
		}
	case *FileSearch:
		if p.Scope == "" {
			p.Scope = ScopeWorkspace
		}
		n := DefaultMaxResults
		if p.MaxResults != nil {
			n = min(*p.MaxResults, MaxResultsCap)
		}
		p.MaxResults = &n
	case *WorktreeShip:
		if p.Strategy == "" {
			p.Strategy = DefaultShipStrategy
		}
		if p.Remote == "" {
			p.Remote = DefaultShipRemote
		}
	case *TextDelta:
		if p.Channel == "" {
			p.Channel = "text"
		}
	}
}
