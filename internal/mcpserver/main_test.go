package mcpserver_test

import (
	"os"
	"testing"

	"github.com/ferry-dev/ferry/internal/binarytest"
)

// The tests that run the ferry binary share one build of it.
func TestMain(m *testing.M) { os.Exit(binarytest.Main(m)) }
