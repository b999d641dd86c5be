// Package grepscan is the Grep tool's search engine: it scans one file for
// a regular expression, streaming, and reports match and context lines in
// order. It knows nothing of tools, JSON or paths.
//
// Its guarantees:
//   - Memory is bounded by a fixed buffer, never by the file or by its
//     longest line; in multiline mode a file is read whole up to a cap
//     (MultilineMaxBytes by default) and skipped beyond it.
//   - In line mode a match never spans lines, and the lines reported are
//     exactly those of a naive line-by-line grep with the same context.
//   - A file with a NUL byte in its first 8 KiB is binary and not searched.
//   - Shown lines are valid UTF-8 without their CR; a line over 500 runes
//     is shown as an excerpt around its first match, between markers.
package grepscan
