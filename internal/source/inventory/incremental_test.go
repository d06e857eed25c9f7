package inventory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValidatesOnlyWhatChanged: the source checks a node on its own only
// when it is new or written differently, and not at all when the file is
// unchanged; problems with a node that was not checked again still name
// where it is written now.
func TestValidatesOnlyWhatChanged(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nodes.yaml")
	svc := []netip.Prefix{pfx("10.32.0.0/24")}
	s := New(Options{File: file, ServiceCIDRs: svc})
	steps := []struct {
		name    string
		content string
		checked int // nodes checked on their own by this step
	}{
		{"first read", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/24}\n- {name: b, internalIP: 10.0.0.2, podCIDR: 10.200.1.0/24}\n- {name: c, internalIP: 10.0.0.3}\n", 3},
		{"unchanged", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/24}\n- {name: b, internalIP: 10.0.0.2, podCIDR: 10.200.1.0/24}\n- {name: c, internalIP: 10.0.0.3}\n", 0},
		{"one node changed", "nodes:\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/24}\n- {name: b, internalIP: 10.0.0.9, podCIDR: 10.200.1.0/24}\n- {name: c, internalIP: 10.0.0.3}\n", 1},
		{"a node added on top: the others move", "nodes:\n- {name: z, internalIP: 10.0.0.26}\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/24}\n- {name: b, internalIP: 10.0.0.9, podCIDR: 10.200.1.0/24}\n- {name: c, internalIP: 10.0.0.3}\n", 1},
		{"a new node clashes with unchanged ones", "nodes:\n- {name: y, internalIP: 10.0.0.3, podCIDR: 10.200.0.0/23}\n- {name: z, internalIP: 10.0.0.26}\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/24}\n- {name: b, internalIP: 10.0.0.9, podCIDR: 10.200.1.0/24}\n- {name: c, internalIP: 10.0.0.3}\n", 1},
		{"the clash removed", "nodes:\n- {name: z, internalIP: 10.0.0.26}\n- {name: a, internalIP: 10.0.0.1, podCIDR: 10.200.0.0/24}\n- {name: b, internalIP: 10.0.0.9, podCIDR: 10.200.1.0/24}\n- {name: c, internalIP: 10.0.0.3}\n", 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			write(t, file, st.content)
			before := s.cache.checked
			got, err := s.Nodes(context.Background())
			want, wantErr := Parse(file, []byte(st.content), svc)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("error:\n%v\nwant (a full validation):\n%v", err, wantErr)
			}
			if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
				t.Errorf("nodes differ from a full validation (-want +got):\n%s", diff)
			}
			if n := s.cache.checked - before; n != st.checked {
				t.Errorf("checked %d nodes on their own, want %d", n, st.checked)
			}
		})
	}
}

// TestIncrementalMatchesFull: over a seeded random walk of edits (nodes
// added, removed, moved, changed, made to clash), the source's answer is
// always that of a full validation of the same content.
func TestIncrementalMatchesFull(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nodes.yaml")
	svc := []netip.Prefix{pfx("10.200.250.0/24")}
	s := New(Options{File: file, ServiceCIDRs: svc})
	rng := rand.New(rand.NewPCG(1, 2))
	line := func() string {
		i := rng.IntN(30)
		switch rng.IntN(6) {
		case 0:
			return fmt.Sprintf("- {name: n%d, internalIP: 10.0.0.%d}", i, rng.IntN(30)+1)
		case 1:
			return fmt.Sprintf("- {name: n%d, internalIP: 10.0.0.%d, podCIDR: 10.200.%d.0/23}", i, rng.IntN(30)+1, rng.IntN(250))
		case 2:
			return fmt.Sprintf("- {name: n%d, internalIP: 10.0.0.%d, podCIDR: 10.200.%d.0/2%d}", i, rng.IntN(30)+1, rng.IntN(250), rng.IntN(4)) // host bits, sometimes
		default:
			return fmt.Sprintf("- name: n%d\n  internalIPs: [10.0.0.%d, fd00::%x]\n  podCIDRs: [10.200.%d.0/24, fd00:10:%x::/64]", i, rng.IntN(30)+1, i, rng.IntN(255), rng.IntN(30))
		}
	}
	var lines []string
	for range 10 {
		lines = append(lines, line())
	}
	valid := 0
	for step := range 400 {
		switch k := rng.IntN(4); {
		case k == 0 || len(lines) == 0:
			i := rng.IntN(len(lines) + 1)
			lines = append(lines[:i], append([]string{line()}, lines[i:]...)...)
		case k == 1:
			i := rng.IntN(len(lines))
			lines = append(lines[:i], lines[i+1:]...)
		case k == 2:
			lines[rng.IntN(len(lines))] = line()
		default:
			i, j := rng.IntN(len(lines)), rng.IntN(len(lines))
			lines[i], lines[j] = lines[j], lines[i]
		}
		content := "nodes:\n" + strings.Join(lines, "\n") + "\n"
		write(t, file, content)
		got, err := s.Nodes(context.Background())
		want, wantErr := Parse(file, []byte(content), svc)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("step %d: error:\n%v\nwant:\n%v\ncontent:\n%s", step, err, wantErr, content)
		}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Fatalf("step %d: nodes (-want +got):\n%s", step, diff)
		}
		if err == nil {
			valid++
		}
	}
	// The walk must visit both valid and invalid inventories to prove
	// anything.
	if valid < 40 || valid > 360 {
		t.Errorf("%d of 400 steps valid: the walk does not mix valid and invalid content", valid)
	}
}
