package client

import (
	"context"
	"path/filepath"
	"time"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/transcript"
)

// This file bounds what the client keeps of its sessions across sessions
// and over time. The protocol has no "session deleted" message, so age and
// total size are the bounds:
//
//   - A session's state (its saved transcript, its file history) not
//     written for stateMaxAge is dropped; so are its artifact records
//     (artifacts.db) when it recorded none for stateMaxAge and is not open
//     in this client, with the snapshots no other record needs.
//   - The file histories of all sessions together stay under
//     Config.HistoryTotal: the least recently written are dropped whole
//     first. A history of a session open in this client is never dropped
//     (its journal is open; filehistory.Prune skips it), and the log says
//     so when that keeps the total over the bound.
//
// Both run at start (the transcripts when their store opens) and then
// every Config.PruneInterval, on one goroutine that ends with Close.

// stateMaxAge is how long the client keeps a session's state after it was
// last written: the transcripts' age bound, shared so that one constant
// says it.
const stateMaxAge = transcript.DefaultMaxAge

// DefaultHistoryTotal bounds the file histories of all sessions together
// (1 GiB): sixteen sessions at the per-session quota.
const DefaultHistoryTotal = 1 << 30

// DefaultPruneInterval is how often a running client prunes.
const DefaultPruneInterval = time.Hour

// startPruning prunes the file histories now and starts the periodic
// pruning; it ends when Close cancels c.stop (Close waits for it).
func (c *Client) startPruning() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.pruneHistories(c.stop)
		c.pruneArtifacts(c.stop, time.Now())
		t := time.NewTicker(c.cfg.PruneInterval)
		defer t.Stop()
		for {
			select {
			case <-c.stop.Done():
				return
			case <-t.C:
				c.pruneTranscripts(c.stop)
				c.pruneHistories(c.stop)
				c.pruneArtifacts(c.stop, time.Now())
			}
		}
	}()
}

// pruneTranscripts drops the transcripts not saved for stateMaxAge.
func (c *Client) pruneTranscripts(ctx context.Context) {
	n, err := c.transcripts.Prune(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		c.log.Error("prune the saved conversations", "err", err)
	case n > 0:
		c.log.Info("saved conversations dropped: not used for too long", "sessions", n, "max_age", stateMaxAge.String())
	}
}

// pruneHistories bounds the sessions' file histories by age and total.
func (c *Client) pruneHistories(ctx context.Context) {
	total := max(c.cfg.HistoryTotal, 0) // < 0: no bound
	res, err := filehistory.Prune(ctx, filepath.Join(c.cfg.StateDir, "history"), filehistory.PruneOptions{MaxAge: stateMaxAge, MaxTotal: total})
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("prune the file histories", "err", err)
		}
		return
	}
	for _, d := range res.Dropped {
		why := "not written for " + stateMaxAge.String()
		if d.Reason == "total" {
			why = "the file histories of all sessions were over --history-total; the least recently written go first"
		}
		c.log.Info("file history dropped", "session", d.Name, "bytes", d.Bytes, "last_written", d.Written.UTC().Format(time.RFC3339), "why", why)
	}
	for _, s := range res.Skipped {
		c.log.Warn("file history: skipped a folder it cannot prune", "name", s.Name, "err", s.Err)
	}
	if res.OverCap {
		c.log.Warn("file histories over --history-total: what is left belongs to sessions open in this client (or folders that cannot be pruned); they are kept",
			"total_bytes", res.Total, "max_bytes", total, "open_sessions", res.Open)
	}
}

// pruneArtifacts drops the artifact records (and snapshots) of the
// sessions that recorded none for stateMaxAge before now and are not open
// here: their downloads end with them.
func (c *Client) pruneArtifacts(ctx context.Context, now time.Time) {
	open := func(id string) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.sessions[id] != nil
	}
	n, rows, err := c.arts.Prune(ctx, now.Add(-stateMaxAge), open)
	switch {
	case err != nil && ctx.Err() == nil:
		c.log.Error("prune the artifact records", "err", err)
	case n > 0:
		c.log.Info("artifact records dropped with their sessions: none recorded for too long", "sessions", n, "records", rows, "max_age", stateMaxAge.String())
	}
}
