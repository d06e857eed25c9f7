// Package nstest gives a test that runs the fabric's Linux data plane its
// own network-namespace prefix, and removes the namespaces carrying it when
// the test ends.
package nstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/dataplane"
)

// Prefix returns a fresh namespace prefix ("rkt" and six hex digits). When
// the test ends, namespaces left with it are removed; unless the test has
// failed already, any that were left are an error: the code under test
// should have removed them.
func Prefix(t testing.TB) string {
	t.Helper()
	prefix := fmt.Sprintf("rkt%06x", rand.Uint32()&0xffffff)
	t.Cleanup(func() {
		removed, err := dataplane.CleanupNamespaces(context.Background(), prefix)
		if err != nil {
			t.Errorf("cleaning up the data plane: %v", err)
		}
		if len(removed) > 0 && !t.Failed() {
			t.Errorf("network namespaces left after the test: %v", removed)
		}
	})
	return prefix
}
