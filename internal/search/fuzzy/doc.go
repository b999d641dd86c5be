// Package fuzzy is the matcher behind the @ file picker: fuzzy subsequence
// scoring of paths in the family of fzf's FuzzyMatchV2 and VS Code's
// scorer, tuned for paths, and a parallel, cancellable top-k search over a
// list of paths.
//
// It guarantees:
//
//   - A query is split on white space into terms; a path matches when every
//     term matches it, in any order. A term matches when its characters
//     occur in the path in order (a subsequence).
//   - Matching ignores case (simple Unicode case folding) and treats NFC and
//     NFD forms of the same text as equal; matching case only adds a bonus.
//   - A '/' in a term matches a path separator and anchors the next
//     character at the start of a path segment ("mm/page" matches
//     "mm/page_alloc.c", not "mm/xpage.c"); a leading '/' anchors the
//     term's first character at a segment start.
//   - Scores reward characters at segment and word starts, runs of
//     consecutive characters, characters in the file name (so a match in the
//     file name beats the same match in a directory) and a file name equal
//     to (or starting with) the term, so that "router" ranks web/router.ts
//     above router/middleware/auth.ts.
//   - Ranking is deterministic: higher raw score, then the shorter path (in
//     bytes), then the lexically smaller path. Result.Score, the wire's
//     match_score, is the raw score over the query's ideal score, in [0, 1].
//   - Result.Ranges are half-open UTF-16 code-unit spans of the original
//     path string, sorted and merged; a character matched inside a
//     decomposed sequence highlights the whole sequence.
//   - TopK returns exactly the K best paths a full ranking would, with the
//     exact number of matches, whatever the number of workers, pruning,
//     seeds and narrowing; it stops within one chunk of paths when its
//     context ends.
package fuzzy
