// Package broker is the seam through which the master's hub routes messages
// between connections: a UI's requests reach the connection of the client
// that runs the session, and a session's events reach every UI watching it.
// The hub only publishes to topics and subscribes to them, so several master
// nodes can later share one broker (NATS) without any change to the hub.
//
// Guarantees every implementation gives (checked by brokertest.Run):
//
//   - Ordering: messages one publisher publishes to one topic are delivered
//     to each subscriber in the order they were published. Nothing is
//     promised across topics or across publishers.
//   - Delivery is at most once: a message published while a topic has no
//     subscriber is gone, and a broker may drop messages when it fails.
//     Whatever must survive is persisted by the hub before it is published.
//   - Subscribe returns once the subscription is active: every message
//     published after it returns reaches deliver (until unsubscribe).
//   - After unsubscribe returns, messages published from then on are not
//     delivered to that subscriber; a delivery already under way may finish.
//   - deliver must not block: the hub hands the bytes to a connection's
//     bounded queue and returns. It may be called from any goroutine, also
//     concurrently when several publishers publish to one topic, and it may
//     call Publish, Subscribe and unsubscribe. deliver must not modify or
//     keep a reference it later modifies to data: subscribers share it.
package broker

import (
	"context"
	"errors"
)

// ErrClosed is returned by Publish and Subscribe after Close.
var ErrClosed = errors.New("broker: closed")

// Broker routes messages between the master's connections by topic.
type Broker interface {
	// Publish sends data to every current subscriber of topic. The caller
	// must not modify data afterwards: it may be handed on without a copy.
	Publish(ctx context.Context, topic string, data []byte) error
	// Subscribe calls deliver with every message published to topic from now
	// on, until the returned unsubscribe is called (it is idempotent).
	Subscribe(topic string, deliver func(data []byte)) (unsubscribe func(), err error)
	// Close drops every subscription; later calls fail with ErrClosed.
	Close() error
}

// Connectivity is implemented by a broker that can lose its connection
// (the NATS broker); one that cannot (the memory broker) need not
// implement it and counts as always connected.
type Connectivity interface {
	// Connected reports whether the broker can route messages now.
	Connected() bool
}

// Connected reports whether b can route messages now: b's own answer when
// it implements Connectivity, true otherwise.
func Connected(b Broker) bool {
	if c, ok := b.(Connectivity); ok {
		return c.Connected()
	}
	return true
}
