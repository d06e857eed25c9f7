//go:build !unix

package ipam

import "context"

// lockFile does nothing where flock is missing: processes sharing an
// allocations file are not serialised there.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
