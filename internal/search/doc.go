// Package search answers the @ picker's file searches (spec §16.1): it ranks
// the paths of a workspace index with the fuzzy matcher and runs the searches
// of one picker so that a newer query supersedes an older one, a cancel stops
// the work at once, and an answer to a superseded query is never sent after
// a newer one.
package search
