package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ip runs the ip command.
func ip(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// delLink deletes a link, succeeding when it is already gone: deleting a
// namespace destroys the far end of each veth pair asynchronously, so a
// router's listing can still name a link that vanishes before the delete.
func delLink(ctx context.Context, ns, link string) error {
	_, err := ip(ctx, "-n", ns, "link", "del", link)
	if err != nil && strings.Contains(err.Error(), "Cannot find device") {
		return nil
	}
	return err
}

// batch runs commands with `ip -n ns -batch -`, stopping at the first
// that fails.
func batch(ctx context.Context, ns string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip -n %s -batch (%d commands, first %q): %w: %s", ns, len(lines), lines[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// links returns the names of the links in a namespace.
func links(ctx context.Context, ns string) (map[string]bool, error) {
	out, err := ip(ctx, "-n", ns, "-j", "link", "show")
	if err != nil {
		return nil, err
	}
	var ls []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &ls); err != nil {
		return nil, fmt.Errorf("reading links of %s: %w", ns, err)
	}
	m := map[string]bool{}
	for _, l := range ls {
		m[l.Name] = true
	}
	return m, nil
}

// waitLinksUp waits (at most 5s) until every veth of a namespace is
// operationally up.
func waitLinksUp(ctx context.Context, ns string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := ip(ctx, "-n", ns, "-j", "link", "show")
		if err != nil {
			return err
		}
		var ls []struct {
			Name  string `json:"ifname"`
			State string `json:"operstate"`
		}
		if err := json.Unmarshal(out, &ls); err != nil {
			return fmt.Errorf("reading links of %s: %w", ns, err)
		}
		down := ""
		for _, l := range ls {
			if l.Name != "lo" && l.State != "UP" {
				down = l.Name
			}
		}
		if down == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("link %s of %s is not up after 5s", down, ns)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
