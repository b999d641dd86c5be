package broker_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/broker"
	"github.com/ferry-dev/ferry/internal/broker/brokertest"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	brokertest.Run(t, func(t *testing.T) broker.Broker {
		b := broker.NewMemory()
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
