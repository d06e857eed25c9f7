package fabric

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childWriter())
	}
	os.Exit(m.Run())
}

func TestPersistenceAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "fabric.db")
	st := openStore(t, path)
	e := newEnvOn(t, "inprocess", st, Options{})
	e.createRG(testRG)
	e.seedVNet(ctx, testRG)
	rt := e.mustPutTable(ctx, testRG, "rt", table(vaRoute("r", "10.200.0.0/24", "10.240.0.20")))
	if _, err := e.putSubnet(ctx, testRG, "kubernetes-vnet", "kubernetes-subnet", armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: api.Ptr("10.240.0.0/24"), RouteTable: &armnetwork.RouteTable{ID: rt.ID}}}); err != nil {
		t.Fatal(err)
	}
	before := e.getTable(ctx, testRG, "rt")
	// An operation still running when the process goes away. Operations
	// store their end on the clock of the server that started them; both
	// servers here share a fake one.
	clock := newTestClock()
	slow := New(st, Options{OperationDuration: 300 * time.Millisecond, Clock: clock.Now})
	tables, _ := armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, slow.ClientOptions())
	if _, err := tables.BeginCreateOrUpdate(ctx, testRG, "pending", table(), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2 := openStore(t, path)
	defer st2.Close()
	e2 := newEnvOn(t, "loopback", st2, Options{Clock: clock.Now})
	after := e2.getTable(ctx, testRG, "rt")
	if api.Str(after.Etag) != api.Str(before.Etag) || len(after.Properties.Routes) != 1 || len(subnetIDs(after)) != 1 {
		t.Errorf("after reopen: etag %s (was %s), routes %v, subnets %v", api.Str(after.Etag), api.Str(before.Etag), routeNames(after), subnetIDs(after))
	}
	if got := e2.getTable(ctx, testRG, "pending"); *got.Properties.ProvisioningState != armnetwork.ProvisioningStateUpdating {
		t.Errorf("pending operation state after reopen = %v", *got.Properties.ProvisioningState)
	}
	clock.Advance(300 * time.Millisecond)
	if got := e2.getTable(ctx, testRG, "pending"); *got.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
		t.Errorf("pending operation did not finish after reopen: %v", *got.Properties.ProvisioningState)
	}
}

const (
	childEnv   = "ROUTEKEEPER_FABRIC_TEST_CHILD"
	childState = "ROUTEKEEPER_FABRIC_TEST_STATE"
	childCount = 15
)

// childWriter runs in a re-executed test binary: once its state is open it
// prints "ready" and waits for a line on stdin (the parent sends it when
// every child is ready, so that the writes interleave), then it adds
// childCount routes named <child>-<i> to table "shared", each by GET + PUT
// with If-Match, re-reading at once on 412 and 409, and checks after every
// write that none of its own routes was lost. It prints how many routes of
// the other writer it saw last, and how many times it had to re-read.
func childWriter() int {
	ctx := context.Background()
	me := os.Getenv(childEnv)
	st, err := store.Open(ctx, os.Getenv(childState))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer st.Close()
	srv := New(st, Options{OperationDuration: 5 * time.Millisecond})
	tables, err := armnetwork.NewRouteTablesClient(testSub, identity.Credential{}, srv.ClientOptions())
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	// Start together, so that the writes interleave.
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Println("error: waiting for the start:", err)
		return 1
	}
	retries, others := 0, 0
	for i := 0; i < childCount; {
		cur, err := tables.Get(ctx, testRG, "shared", nil)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		mine, seenOthers := 0, 0
		for _, r := range cur.Properties.Routes {
			if strings.HasPrefix(api.Str(r.Name), me+"-") {
				mine++
			} else {
				seenOthers++
			}
		}
		if mine != i {
			fmt.Printf("error: lost update: %d of my routes in the table, want %d\n", mine, i)
			return 1
		}
		others = seenOthers
		rt := cur.RouteTable
		rt.Properties.Routes = append(rt.Properties.Routes, vaRoute(fmt.Sprintf("%s-%d", me, i), fmt.Sprintf("10.%d.%d.0/24", me[0], i), "10.240.0.4"))
		p, err := tables.BeginCreateOrUpdate(withHeader(ctx, "If-Match", api.Str(cur.Etag)), testRG, "shared", rt, nil)
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusConflict) {
			retries++
			continue
		}
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		if _, err := p.PollUntilDone(ctx, fastPoll); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		i++
	}
	fmt.Printf("ok others=%d retries=%d\n", others, retries)
	return 0
}

func TestTwoProcessesShareAStateFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fabric.db")
	st := openStore(t, path)
	e := newEnvOn(t, "inprocess", st, Options{})
	e.createRG(testRG)
	e.mustPutTable(ctx, testRG, "shared", table())
	st.Close()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"alpha", "bravo"}
	outs := make([]string, len(names))
	ready := make(chan error, len(names))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+name, childState+"="+path)
			var errOut strings.Builder
			cmd.Stderr = &errOut
			stdin, err := cmd.StdinPipe()
			if err != nil {
				ready <- err
				return
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				ready <- err
				return
			}
			if err := cmd.Start(); err != nil {
				ready <- err
				return
			}
			r := bufio.NewReader(stdout)
			first, err := r.ReadString('\n')
			if first != "ready\n" {
				ready <- fmt.Errorf("%s: %q instead of ready (%v)", name, first, err)
			} else {
				ready <- nil
				<-start
			}
			fmt.Fprintln(stdin, "go")
			stdin.Close()
			rest, _ := io.ReadAll(r)
			err = cmd.Wait()
			outs[i] = strings.TrimSpace(first + string(rest) + errOut.String())
			if err != nil {
				outs[i] += " (" + err.Error() + ")"
			}
		}()
	}
	for range names {
		if err := <-ready; err != nil {
			t.Error(err)
		}
	}
	close(start)
	wg.Wait()
	sawAll := false
	for i, out := range outs {
		t.Logf("%s: %s", names[i], out)
		last := out[strings.LastIndex(out, "\n")+1:]
		if !strings.HasPrefix(last, "ok ") {
			t.Fatalf("%s failed: %s", names[i], out)
		}
		var others, retries int
		fmt.Sscanf(last, "ok others=%d retries=%d", &others, &retries)
		if others == childCount {
			sawAll = true
		}
	}
	if !sawAll {
		t.Error("neither process saw all of the other's routes")
	}
	st, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e = newEnvOn(t, "inprocess", st, Options{})
	got := e.getTable(ctx, testRG, "shared")
	if n := len(got.Properties.Routes); n != 2*childCount {
		t.Errorf("the shared table has %d routes, want %d: %v", n, 2*childCount, routeNames(got))
	}
	// Every operation either process started has finished.
	if *got.Properties.ProvisioningState != armnetwork.ProvisioningStateSucceeded {
		t.Errorf("state = %v", *got.Properties.ProvisioningState)
	}
}
