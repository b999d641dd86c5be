// Package e2e holds the end-to-end tests of the live system: a UI's
// WebSocket, the master on a real SQLite file and a real client with the
// echo adapter, all on loopback, with a TCP proxy between client and master
// so that a test can cut the network or restart the master on the same
// address. It has no code of its own.
package e2e
