package inventory

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigInventory is an inventory of n nodes, each with an explicit /24 pod
// CIDR of 10.0.0.0/8 (so the overlap check has n claims), one IP each.
func bigInventory(n int) []byte {
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: node-%d\n    internalIP: 172.%d.%d.%d\n    podCIDR: 10.%d.%d.0/24\n", i, 16+i>>16, i>>8&255, i&255, i>>8&255, i&255)
	}
	return []byte(b.String())
}

var benchSizes = []int{10_000, 50_000}

// BenchmarkParse is the validation of a whole inventory (a first read, or
// the CLI): YAML decoding, per-node checks and the cross checks.
func BenchmarkParse(b *testing.B) {
	svc := []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}
	for _, n := range benchSizes {
		data := bigInventory(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse("nodes.yaml", data, svc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNodesUnchanged is what the daemon pays per reconcile when the
// file has not changed (no IPAM: every node has its pod CIDR).
func BenchmarkNodesUnchanged(b *testing.B) {
	for _, n := range benchSizes {
		dir := b.TempDir()
		file := filepath.Join(dir, "nodes.yaml")
		if err := writeFile(file, bigInventory(n)); err != nil {
			b.Fatal(err)
		}
		s := New(Options{File: file})
		if _, err := s.Nodes(context.Background()); err != nil { // the first read validates all
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Nodes(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }

// BenchmarkNodesOneChanged is what the daemon pays when one node of the
// file changed: every read alternates between two contents that differ in
// one node's internal IP.
func BenchmarkNodesOneChanged(b *testing.B) {
	for _, n := range benchSizes {
		dir := b.TempDir()
		file := filepath.Join(dir, "nodes.yaml")
		data := [2][]byte{bigInventory(n), bigInventory(n)}
		data[1] = []byte(strings.Replace(string(data[1]), "internalIP: 172.16.0.7\n", "internalIP: 172.31.255.254\n", 1))
		s := New(Options{File: file})
		if err := writeFile(file, data[1]); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Nodes(context.Background()); err != nil { // the first read validates all
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				b.StopTimer()
				if err := writeFile(file, data[i%2]); err != nil {
					b.Fatal(err)
				}
				i++
				b.StartTimer()
				if _, err := s.Nodes(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
