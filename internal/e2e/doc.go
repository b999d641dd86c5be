// Package e2e holds the end-to-end tests of the live system: a UI's
// WebSocket, the master on a real SQLite file and a real client with the
// echo adapter, all on loopback, with a TCP proxy between client and master
// so that a test can cut the network or restart the master on the same
// address. Some tests run the real ferry binary as processes (built once
// per package run by internal/binarytest): crash recovery of `ferry up`,
// and TestFailoverThreeNodes, issue 21's failover test on PostgreSQL
// ($FERRY_TEST_POSTGRES) and a real nats-server ($FERRY_TEST_NATS_SERVER):
// three `ferry serve` nodes behind a round-robin TCP proxy, `ferry connect`
// with ferry's own agent on the fake model provider, one UI on each node;
// the node holding the client is SIGKILLed mid-turn, and every UI must end
// with exactly the events stored in PostgreSQL, in order; a permission
// answered on one node reaches the client on another, and a download link
// made on one node works on another. It has no code of its own.
package e2e
