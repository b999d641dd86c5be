package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/internal/store"
)

// ferry up issues a client token for its own client on every start and
// revokes it when it stops. A crash (SIGKILL, power loss) skips the
// revocation: the old token stays valid and keeps owning the machine, and
// the master would refuse the new one. So up records the token's ID (never
// its secret: the secret lives only in memory) in the client's state
// directory, and on the next start, holding the state directory's lock (no
// other process serves this machine), hands the machine over to the new
// token and revokes the old one. It takes a machine back only from a token
// an earlier ferry up made, never from a `ferry connect` token.

// upTokenName names the client tokens ferry up issues; earlier versions
// used the same name and recorded nothing, which is how their tokens are
// recognised.
const upTokenName = "ferry up"

// upTokenFile is the file in the client's state directory holding the IDs
// of the tokens ferry up issued and has not seen revoked, one a line.
const upTokenFile = "up-tokens"

// maxUpTokenIDs bounds the file: IDs unknown to this database (it may be
// another one, as with --db) are kept, the oldest dropped first.
const maxUpTokenIDs = 16

// errMachineTaken says up found its machine owned by a token it did not
// make.
var errMachineTaken = errors.New("the machine is registered with another client token")

// readUpTokens returns the IDs recorded in dir (none when the file does not
// exist).
func readUpTokens(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, upTokenFile)) //nolint:gosec // the user's own state directory
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", upTokenFile, err)
	}
	return strings.Fields(string(b)), nil
}

// writeUpTokens replaces the file atomically and durably (temp file,
// fsync, rename, fsync of the directory), so that after a power loss it
// holds either the old list or the new one.
func writeUpTokens(dir string, ids []string) (err error) {
	if len(ids) > maxUpTokenIDs {
		ids = ids[len(ids)-maxUpTokenIDs:]
	}
	f, err := os.CreateTemp(dir, "."+upTokenFile+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", upTokenFile, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("write %s: %w", upTokenFile, err)
	}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id + "\n")
	}
	if _, err = f.WriteString(b.String()); err != nil {
		return fmt.Errorf("write %s: %w", upTokenFile, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", upTokenFile, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", upTokenFile, err)
	}
	if err = os.Rename(tmp, filepath.Join(dir, upTokenFile)); err != nil {
		return fmt.Errorf("write %s: %w", upTokenFile, err)
	}
	if d, err := os.Open(dir); err == nil { //nolint:gosec // the user's own state directory
		_ = d.Sync() // best effort: not every file system syncs a directory
		_ = d.Close()
	}
	return nil
}

// reclaim makes the client token cur own machine, which an earlier ferry
// up with the same state directory may have left owned by its own token,
// and revokes the tokens earlier runs left behind. It must run while the
// caller holds the state directory's lock (client.New takes it), before
// the client connects. It returns the IDs of the tokens it revoked; when
// the machine belongs to a valid token up did not make, it returns an
// error wrapping errMachineTaken and changes nothing.
func reclaim(ctx context.Context, st store.Store, dir, machine string, cur store.Token) (revoked []string, err error) {
	recorded, err := readUpTokens(dir)
	if err != nil {
		return nil, err
	}
	toks, err := st.ListTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	byID := make(map[string]store.Token, len(toks))
	for _, t := range toks {
		byID[t.ID] = t
	}
	// An earlier up's token: recorded by this state directory, or (from a
	// version that recorded nothing) a client token with up's name.
	ours := func(t store.Token) bool {
		if t.Kind != store.TokenClient || t.ID == cur.ID {
			return false
		}
		return t.Name == upTokenName || slices.Contains(recorded, t.ID)
	}
	ms, err := st.Machines(ctx)
	if err != nil {
		return nil, fmt.Errorf("list machines: %w", err)
	}
	var mc *store.Machine
	for i := range ms {
		if ms[i].ID == machine {
			mc = &ms[i]
		}
	}
	if mc != nil && mc.TokenID != cur.ID {
		// An owner that is gone (revoked, or another database's) no
		// longer binds the machine: the master lets cur take it.
		if owner, ok := byID[mc.TokenID]; ok && !ours(owner) {
			name := owner.Name
			if name == "" {
				name = "no name"
			}
			return nil, fmt.Errorf("machine %s: %w %s (%s, kind %s)", machine, errMachineTaken, owner.ID, name, owner.Kind)
		}
	}
	// Record cur before touching anything, the old IDs kept: a crash from
	// here on leaves a file that names whichever token owns the machine.
	keep := append(without(recorded, cur.ID), cur.ID)
	if err := writeUpTokens(dir, keep); err != nil {
		return nil, err
	}
	if mc != nil && mc.TokenID != cur.ID {
		if _, ok := byID[mc.TokenID]; ok {
			// Hand over first, revoke after: the machine is never without
			// a valid owner that another token could step in for.
			moved := *mc
			moved.TokenID = cur.ID
			if err := st.PutMachine(ctx, moved); err != nil {
				return nil, fmt.Errorf("hand the machine over: %w", err)
			}
			if err := revokeIfPresent(ctx, st, mc.TokenID); err != nil {
				return nil, err
			}
			revoked = append(revoked, mc.TokenID)
		}
	}
	// The tokens earlier runs of this state directory recorded are
	// revoked too (they were issued for this machine and their secrets
	// died with their process); IDs this database does not know are kept
	// for the database they belong to.
	var unknown []string
	for _, id := range recorded {
		t, ok := byID[id]
		switch {
		case id == cur.ID || slices.Contains(revoked, id):
		case !ok:
			unknown = append(unknown, id)
		case ours(t):
			if err := revokeIfPresent(ctx, st, id); err != nil {
				return revoked, err
			}
			revoked = append(revoked, id)
		}
	}
	return revoked, writeUpTokens(dir, append(unknown, cur.ID))
}

func revokeIfPresent(ctx context.Context, st store.Store, id string) error {
	if err := st.RevokeToken(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	return nil
}

// without returns a copy of ids without id.
func without(ids []string, id string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(x string) bool { return x == id })
}

// forgetUpToken removes id from the file after up revoked it on a clean
// exit (best effort: a leftover ID is dropped by the next start).
func forgetUpToken(dir, id string) {
	ids, err := readUpTokens(dir)
	if err != nil || !slices.Contains(ids, id) {
		return
	}
	_ = writeUpTokens(dir, without(ids, id))
}
