// Package fileref implements the inline file reference token of prompt_text
// (spec §16.2) and its conversions for agents (§16.3). The master uses Escape
// and Compose, the client uses Parse and the conversions on the parsed
// Prompt. Everything here is pure; content is only read through a
// caller-supplied Loader.
//
// # Grammar
//
// Parse reads prompt_text once, left to right:
//
//	token   = "<@file:" ref-id "|" display ">"
//	ref-id  = 1*( ALPHA / DIGIT / "_" / "-" )
//	display = 1*( any byte but ">" )
//
// This is the spec's regex (?<!\\)<@file:([a-zA-Z0-9_-]+)\|([^>]+)> with its
// look-behind replaced by the parity rule below. Inside a token nothing is
// escaped: the display path is taken byte for byte.
//
// # Escaping and the parity rule
//
// Tokens may only come from the UI's file picker, so Escape protects typed
// text: "\" becomes "\\" and every "<@" (not only "<@file:", to keep future
// token kinds such as "<@user:" safe) becomes "\<@".
//
// The spec's look-behind checks a single backslash, so typed text ending in
// "\" right before a picked file (escaped to "\\<@file:…>") would lose the
// token. Parse counts instead: a "<@" is escaped iff an odd number of
// consecutive backslashes precede it. A run of n backslashes decodes to n/2
// backslashes and then
//
//   - before "<@": a literal "<@" if n is odd; if n is even the "<@" may open
//     a token (and is literal text when it does not);
//   - before anything else: one more backslash if n is odd, so a stray single
//     backslash that no escaper produced is kept as it was written.
//
// For every text Escape produces this is exactly the spec's intent, so
// Parse(Escape(s), refs) is s with no token, whatever s and refs are, and a
// hand-typed token never parses.
//
// # Display paths
//
// A token cannot carry every display path: ">" would end it, an empty one
// does not match the grammar, and line breaks or other control characters
// make the prompt unreadable. Compose therefore writes ">" as "›" (U+203A),
// each control character (C0, DEL, C1, U+2028, U+2029) as a space, and
// invalid UTF-8 as U+FFFD; an empty display path falls back to the file's
// path. Nothing is lost: the real path travels in file_references.
//
// # References
//
// Compose numbers files ref_0, ref_1, … in order of first appearance. A file
// (a path with its workspace_id: the same path in two workspaces is two
// files) picked twice reuses its first reference (file_references lists
// files, not picks); its metadata comes from the first pick, while each token keeps the
// display path of its own pick, so the segments round-trip exactly.
//
// Parse looks every token's ref_id up in refs; when refs holds a ref_id more
// than once, the first entry wins. A token whose ref_id is not in refs is
// kept as literal text (spec: never dropped), written verbatim as it appears
// in prompt_text: it was matched as a token in step 1 of the spec's parse
// order, so it is not part of the escaped text that step 3 decodes.
//
// # Conversions
//
// The Prompt methods Literal, FileList, Mentions, Labels, Inline and
// ScriptArgs convert tokens for the kinds of agents of §16.3. A token whose
// reference has no usable path (see Prompt.Files), or that a conversion
// cannot express, is written as its display path (spec: never dropped).
//
// # Cost
//
// Parse, Escape and Compose run in time linear in their input. Parse caches
// the position of the next ">" (or that there is none), so a long run of
// unclosed "<@file:x|" openers costs O(n) rather than O(n²).
package fileref
