package agent_test

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// longHistory gives a the three turns of a long conversation (about 2,500
// tokens), each question and answer marked.
func longHistory(t *testing.T, a *agent.Agent, srv *fake.Server) {
	t.Helper()
	text := func(marker string, n int) string {
		return marker + " " + strings.Repeat("lorem ipsum dolor sit amet ", n)
	}
	for i, tc := range []struct {
		marker string
		n      int
	}{{"FIRST-TURN", 200}, {"SECOND-TURN", 200}, {"THIRD-TURN", 20}} {
		srv.Script(fake.Reply{Text: []string{text(tc.marker+"-ANSWER", tc.n)}})
		if _, err := a.Run(testCtx(t), textTurn(text(tc.marker, tc.n)), newRecorder().emit); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
}

// askedWords is the word count a summary request asks for.
var askedWords = regexp.MustCompile(`at most about (\d+) words`)

// summaryRoute answers the summary requests of a compaction: the first
// with times as many words as it asks for, each later one (a retry) with
// later times as many; other requests are left to the script. It counts
// the summary requests in *n.
func summaryRoute(srv *fake.Server, n *int, times, later int) {
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		m := askedWords.FindStringSubmatch(agenttest.LastUserText(r))
		if m == nil {
			return fake.Reply{}, false
		}
		words, _ := strconv.Atoi(m[1])
		k := times
		if *n > 0 {
			k = later
		}
		*n++
		return fake.Reply{Text: []string{"SUMMARY:" + strings.Repeat(" word", words*k)}}, true
	})
}

// checkMeetsTarget fails unless done is at most 10 % over ratio of the
// size before and reports the ratio it achieved.
func checkMeetsTarget(t *testing.T, done *protocol.CompactionDone, ratio float64) {
	t.Helper()
	target := ratio * float64(done.TokensBefore)
	if done.TokensBefore < 2000 || float64(done.TokensAfter) > 1.1*target {
		t.Fatalf("before %d after %d: over the target %.0f (ratio %.2f) by more than 10 %%", done.TokensBefore, done.TokensAfter, target, ratio)
	}
	want := float64(done.TokensAfter) / float64(done.TokensBefore)
	if done.AchievedRatio == nil || math.Abs(*done.AchievedRatio-want) > 0.0001 {
		t.Fatalf("achieved_ratio %v, want %.4f (%d / %d)", done.AchievedRatio, want, done.TokensAfter, done.TokensBefore)
	}
}

// compactLong compacts a long history to ratio while the model answers
// its summary requests as summaryRoute does with times and later, checks
// that the target is met (checkMeetsTarget), and returns the agent, its
// provider and the number of summary requests made.
func compactLong(t *testing.T, ratio float64, times, later int) (*agent.Agent, *fake.Server, int) {
	t.Helper()
	srv := fake.New(t)
	a, _ := fakeAgent(t, srv, fake.Anthropic, nil)
	longHistory(t, a, srv)
	var summaries int
	summaryRoute(srv, &summaries, times, later)
	done, err := a.Compact(testCtx(t), &protocol.SessionCompact{TargetTokenRatio: &ratio})
	if err != nil {
		t.Fatal(err)
	}
	checkMeetsTarget(t, done, ratio)
	return a, srv, summaries
}

// TestCompactionMeetsTargetWhenTheSummaryRunsLong: the model's first
// summary is three times as long as asked; the agent measures it, asks for
// a shorter one, and the history lands within 10 % of the target ratio,
// which agent.compaction.done reports.
func TestCompactionMeetsTargetWhenTheSummaryRunsLong(t *testing.T) {
	t.Parallel()
	_, srv, summaries := compactLong(t, 0.3, 3, 1)
	if summaries != 2 {
		t.Fatalf("%d summary requests, want the first and one shorter", summaries)
	}
	// The retry shortens the summary it got: it does not send the whole
	// history again.
	reqs := srv.ModelRequests()
	if last := agenttest.MessagesJSON(reqs[len(reqs)-1]); strings.Contains(last, "FIRST-TURN") || !strings.Contains(last, "SUMMARY:") {
		t.Fatalf("the retry sent %s", last)
	}
}

// TestCompactionTrimsASummaryThatStaysLong: the model ignores the request
// to shorten its summary; the agent cuts it to fit, says so in it, and
// still meets the target.
func TestCompactionTrimsASummaryThatStaysLong(t *testing.T) {
	t.Parallel()
	a, _, _ := compactLong(t, 0.2, 4, 4)
	h := a.History()
	if len(h) == 0 || !strings.Contains(h[0].Content[0].Text, "SUMMARY:") || !strings.Contains(h[0].Content[0].Text, agent.SummaryCutNote) {
		t.Fatalf("history after the trim starts %+v", h[0])
	}
}

// TestCompactionRefusesAnUnreachableTarget: a ratio whose target no
// summary can fit in is refused, coded on the field, before any model
// call; the history is as it was.
func TestCompactionRefusesAnUnreachableTarget(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	a, _ := fakeAgent(t, srv, fake.Anthropic, nil)
	longHistory(t, a, srv)
	was := len(a.History())
	calls := len(srv.ModelRequests())
	ratio := 0.001
	_, err := a.Compact(testCtx(t), &protocol.SessionCompact{TargetTokenRatio: &ratio})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidValue || pe.Field != "payload.target_token_ratio" || !strings.Contains(pe.Message, "%") {
		t.Fatalf("Compact = %v, want invalid_value on payload.target_token_ratio saying the smallest ratio", err)
	}
	if len(a.History()) != was || len(srv.ModelRequests()) != calls {
		t.Fatalf("history %d → %d messages, %d model calls: the refused compaction changed something", was, len(a.History()), len(srv.ModelRequests())-calls)
	}
}

// TestCompactionWithoutARatioOnAShortHistory: with no ratio asked, a
// history too short for the default ratio is compacted to the smallest
// summary that fits, and the ratio it reached is reported; one no summary
// could make smaller is kept as it is, without a model call.
func TestCompactionWithoutARatioOnAShortHistory(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	a, _ := fakeAgent(t, srv, fake.Anthropic, nil)
	srv.Script(fake.Reply{Text: []string{"Hi."}})
	if _, err := a.Run(testCtx(t), textTurn("hello"), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	calls := len(srv.ModelRequests())
	done, err := a.Compact(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.TokensAfter != done.TokensBefore || done.AchievedRatio == nil || *done.AchievedRatio != 1 || len(srv.ModelRequests()) != calls {
		t.Fatalf("a tiny history: done %+v after %d model calls, want it kept as it is", done, len(srv.ModelRequests())-calls)
	}

	srv.Script(fake.Reply{Text: []string{strings.Repeat("ok ", 60)}})
	if _, err := a.Run(testCtx(t), textTurn(strings.Repeat("more words here ", 20)), newRecorder().emit); err != nil {
		t.Fatal(err)
	}
	srv.Script(fake.Reply{Text: []string{"The user said hello and more; the agent agreed."}})
	done, err = a.Compact(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if done.AchievedRatio == nil || done.TokensAfter >= done.TokensBefore ||
		math.Abs(*done.AchievedRatio-float64(done.TokensAfter)/float64(done.TokensBefore)) > 0.0001 {
		t.Fatalf("a short history: done %+v", done)
	}
}
