package search

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

type answer struct {
	id  string
	err error
}

// slowSearch blocks until its context ends or release is closed.
func newRunner(release <-chan struct{}) (*Queries[string, string], *[]answer, *sync.Mutex) {
	var mu sync.Mutex
	var got []answer
	q := NewQueries(func(ctx context.Context, id string) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-release:
			return "result of " + id, nil
		}
	}, func(id, resp string, err error) {
		mu.Lock()
		got = append(got, answer{id, err})
		mu.Unlock()
	})
	return q, &got, &mu
}

func TestQueriesSupersede(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	q, got, mu := newRunner(release)
	for i := range 5 {
		id := fmt.Sprintf("q%d", i)
		q.Submit(context.Background(), id, id)
	}
	close(release)
	q.Idle()
	mu.Lock()
	defer mu.Unlock()
	if len(*got) != 1 || (*got)[0].id != "q4" {
		t.Fatalf("answers %v, want only the newest q4", *got)
	}
}

func TestQueriesCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	q, got, mu := newRunner(release)
	q.Submit(context.Background(), "a", "a")
	if !q.Cancel("a") {
		t.Fatal("cancel of the running query reported nothing to cancel")
	}
	if q.Cancel("a") || q.Cancel("other") {
		t.Fatal("cancel of a finished or unknown query must report false")
	}
	start := time.Now()
	q.Idle() // the runner saw its context end: no release needed
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancelled search kept running for %v", d)
	}
	close(release)
	mu.Lock()
	defer mu.Unlock()
	if len(*got) != 0 {
		t.Fatalf("a cancelled query was answered: %v", *got)
	}
}

// Under a storm of submissions with searches finishing at random moments,
// answers arrive in submission order and the last query is always answered.
func TestQueriesOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []int
	q := NewQueries(func(ctx context.Context, n int) (int, error) {
		time.Sleep(time.Duration(n%3) * 200 * time.Microsecond)
		return n, nil
	}, func(n, _ int, _ error) {
		mu.Lock()
		order = append(order, n)
		mu.Unlock()
	})
	for i := range 500 {
		q.Submit(context.Background(), fmt.Sprint(i), i)
		if i%7 == 0 {
			time.Sleep(300 * time.Microsecond)
		}
	}
	q.Idle()
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("answer %d delivered after %d: out of order", order[i], order[i-1])
		}
	}
	if len(order) == 0 || order[len(order)-1] != 499 {
		t.Fatalf("the newest query was not answered: %v", order)
	}
}

func TestQueriesClose(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	q, got, mu := newRunner(release)
	q.Submit(context.Background(), "a", "a")
	q.Close()
	q.Submit(context.Background(), "b", "b")
	close(release)
	q.Idle()
	mu.Lock()
	defer mu.Unlock()
	if len(*got) != 0 {
		t.Fatalf("answers after Close: %v", *got)
	}
}
