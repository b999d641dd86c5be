// Package protocol is ferry's wire contract between the master, the local
// client and the browser UI: the envelope, a Go type for every message, and one
// strict decoder.
//
// Guarantees:
//
//   - Every message is one JSON object: type, message_id (UUID v4), parent_id,
//     session_id, seq, epoch and payload. [Decode] refuses an unknown type, a
//     missing required field, a wrong JSON type, a value outside its enum or
//     range, and a message over [MaxMessageBytes], each with an [*Error] whose
//     Code is one of the documented codes and whose Field names the culprit as a
//     path such as "payload.file_references[2].ref_id". It never panics.
//   - Unknown extra fields are tolerated and dropped, so a newer peer can add
//     fields without breaking an older one (forward compatibility).
//   - Defaults from the specification are applied in one place
//     ([applyDefaults]): input_type "text", scope "workspace", max_results 20
//     capped at 50, and the others listed in docs/protocol.md.
//   - The rules live in the struct tags of the message types (the `jsonschema`
//     tag: enum, minimum, maximum, minLength, maxLength, pattern, format; a field
//     whose json tag lacks omitempty is required). The validator here and the
//     JSON Schemas in docs/schema are both derived from those tags, so they
//     cannot drift apart.
//
// The package depends on the standard library only, so any Go program can speak
// ferry's protocol by importing it.
//
// # Version history
//
//   - 1: the first version: §6 control events, §16 file references and search,
//     session.capabilities, the agent.* turn events, ui.prompt and error;
//     then, before any release, the live system's messages: machines and
//     workspaces in session.capabilities, control.session.open and
//     session.opened, the ui.* session requests, the master.* answers,
//     master.ack, and the error codes unauthorized, not_found,
//     client_offline, interaction_settled, busy and slow_consumer; then
//     agent.artifact (replacing the unused agent.artifact.registered
//     placeholder) for issue 8's file artifacts, and their downloads:
//     ui.artifacts.list and master.artifacts, control.artifact.read,
//     .range, .ack and .cancel, session.artifact.meta and .end, and the
//     binary data frame (ArtifactChunk), the one message that is not JSON.
package protocol
