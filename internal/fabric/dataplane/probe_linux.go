package dataplane

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// probePort is the UDP port probes are sent to.
const probePort = 7777

// Probe sends UDP packets from src to dst (addresses of nodes or pods of
// the data plane with prefix) at a fixed rate and counts which arrive. It
// opens a sender in src's namespace and a receiver in dst's, so nothing is
// sent outside the data plane's namespaces.
func Probe(ctx context.Context, prefix string, src, dst netip.Addr, o ProbeOptions) (ProbeResult, error) {
	if o.Rate <= 0 {
		o.Rate = 100
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 500 * time.Millisecond
	}
	res := ProbeResult{Src: src, Dst: dst, Interval: time.Duration(float64(time.Second) / o.Rate)}
	srcNS, err := FindNamespace(ctx, prefix, src)
	if err != nil {
		return res, fmt.Errorf("probe source: %w", err)
	}
	dstNS, err := FindNamespace(ctx, prefix, dst)
	if err != nil {
		return res, fmt.Errorf("probe destination: %w", err)
	}
	var rx *net.UDPConn
	if err := inNetns(dstNS, func() error {
		var err error
		rx, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, probePort)))
		return err
	}); err != nil {
		return res, fmt.Errorf("probe receiver on %s: %w", dst, err)
	}
	defer rx.Close()
	var tx *net.UDPConn
	if err := inNetns(srcNS, func() error {
		var err error
		tx, err = net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)),
			net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, probePort)))
		return err
	}); err != nil {
		return res, fmt.Errorf("probe sender on %s: %w", src, err)
	}
	defer tx.Close()

	total := int(o.Duration.Seconds() * o.Rate)
	got := make([]bool, total)
	sentAt := make([]time.Time, total)
	var mu sync.Mutex
	received := 0
	sentSoFar := func() int { return total } // replaced once sending ends
	allIn := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for {
			n, err := rx.Read(buf)
			if err != nil {
				return
			}
			if n < 8 {
				continue
			}
			seq := binary.BigEndian.Uint64(buf)
			mu.Lock()
			fresh := seq < uint64(len(got)) && !got[seq]
			if fresh {
				got[seq] = true
				received++
				if received >= sentSoFar() {
					select {
					case allIn <- struct{}{}:
					default:
					}
				}
			}
			mu.Unlock()
			if fresh && o.OnReceive != nil {
				o.OnReceive(int(seq))
			}
		}
	}()

	res.Start = time.Now()
	tick := time.NewTicker(res.Interval)
	defer tick.Stop()
	pkt := make([]byte, 16)
send:
	for seq := 0; seq < total; seq++ {
		sentAt[seq] = time.Now()
		binary.BigEndian.PutUint64(pkt, uint64(seq))
		binary.BigEndian.PutUint64(pkt[8:], uint64(sentAt[seq].UnixNano()))
		tx.Write(pkt) // a refusal (ICMP unreachable) is a lost packet, not an error
		res.Sent++
		select {
		case <-ctx.Done():
			break send
		case <-tick.C:
		}
	}
	mu.Lock()
	sent := res.Sent
	sentSoFar = func() int { return sent }
	done := received >= sent
	mu.Unlock()
	if !done {
		select {
		case <-allIn:
		case <-time.After(o.Grace):
		}
	}
	rx.Close()
	wg.Wait()

	run, runStart := 0, 0
	for i := 0; i < res.Sent; i++ {
		if got[i] {
			res.Received++
			run = 0
			continue
		}
		if run == 0 {
			runStart = i
		}
		run++
		if run > res.LongestLossRun {
			res.LongestLossRun = run
			res.LossStart = sentAt[runStart]
		}
	}
	res.LongestLoss = time.Duration(res.LongestLossRun) * res.Interval
	if res.Sent > 0 {
		res.ReceivedAtStart, res.ReceivedAtEnd = got[0], got[res.Sent-1]
	}
	return res, nil
}

// FindNamespace returns the node or pod namespace of the data plane with
// prefix that holds address a.
func FindNamespace(ctx context.Context, prefix string, a netip.Addr) (string, error) {
	if err := CheckPrefix(prefix); err != nil {
		return "", err
	}
	names, err := listNamespaces(prefix)
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		return "", fmt.Errorf("no data plane with prefix %q is running (no namespace %s-*)", prefix, prefix)
	}
	for _, ns := range names {
		if strings.HasPrefix(ns, prefix+routerInfix) {
			continue // routers hold the gateways, not endpoints
		}
		out, err := ip(ctx, "-n", ns, "-4", "-j", "addr", "show")
		if err != nil {
			continue // removed meanwhile
		}
		var ifs []struct {
			Name  string `json:"ifname"`
			Addrs []struct {
				Local string `json:"local"`
			} `json:"addr_info"`
		}
		if err := json.Unmarshal(out, &ifs); err != nil {
			return "", fmt.Errorf("reading addresses of %s: %w", ns, err)
		}
		for _, i := range ifs {
			if i.Name != "eth0" {
				continue // a node's pod links hold the pod gateway
			}
			for _, ad := range i.Addrs {
				if ad.Local == a.String() {
					return ns, nil
				}
			}
		}
	}
	return "", errors.New(a.String() + " is no node's or pod's address in data plane " + prefix)
}
