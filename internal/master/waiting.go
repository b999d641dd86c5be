package master

import (
	"encoding/json"
	"errors"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// resendSettled answers a client's session.interactions.waiting: an
// answer or a timeout is sent once (only prompts are sent again until
// answered: deliveries.go), so one sent while the client's connection was
// dying is lost with it. The store
// knows how each interaction was settled; the client is sent that
// settlement again (the adapter takes only the first answer, so a second
// copy is harmless). Open interactions need nothing: their answer or
// timeout is still to come. Only the connection's own machine's sessions
// are answered.
func (m *Master) resendSettled(c *conn, machine string, msg *protocol.Message) {
	p := msg.Payload.(*protocol.InteractionsWaiting)
	s, err := m.session(c.ctx, msg.SessionID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.sendError(msg.MessageID, msg.SessionID, m.wireError(err, "load session"))
		return
	}
	if err != nil || s.machineID != machine {
		c.sendError(msg.MessageID, msg.SessionID, &protocol.Error{Code: protocol.CodeNotFound, Field: "session_id",
			Message: "no such session on this machine"})
		return
	}
	for _, id := range p.InteractionIDs {
		in, err := m.st.Interaction(c.ctx, s.id, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			c.log.Error("load interaction to send its settlement again", "session", s.id, "interaction", id, "err", err)
			continue
		}
		if out := settlementOf(in); out != nil {
			out.SessionID = s.id
			m.toClient(s, out, "")
		}
	}
}

// settlementOf is the control message that settled in, as the client got
// it the first time (nil while it is open, or when it cannot be rebuilt).
func settlementOf(in store.Interaction) *protocol.Message {
	var answer *protocol.InteractionResponse
	if len(in.Answer) > 0 && string(in.Answer) != "null" {
		answer = &protocol.InteractionResponse{}
		if err := json.Unmarshal(in.Answer, answer); err != nil {
			return nil
		}
		answer.InteractionID = in.ID
	}
	switch in.Outcome {
	case "answered":
		if answer == nil {
			return nil
		}
		return protocol.New(protocol.TypeInteractionResponse, answer)
	case "timeout":
		to := &protocol.InteractionTimeout{InteractionID: in.ID}
		if answer != nil {
			sv := answer.SelectedValue
			to.SelectedValue, to.TextInput = &sv, answer.TextInput
		}
		return protocol.New(protocol.TypeInteractionTimeout, to)
	}
	return nil // open, or cancelled with its turn: nothing to deliver
}
