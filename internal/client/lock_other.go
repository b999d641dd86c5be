//go:build !unix

package client

import (
	"fmt"
	"os"
)

// lockStateDir opens dir/lock; without flock the exclusion is not enforced.
func lockStateDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+string(os.PathSeparator)+"lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("client: lock state directory: %w", err)
	}
	return f, nil
}
