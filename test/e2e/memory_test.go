package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/routekeeper/routekeeper/internal/armerr"
	"github.com/routekeeper/routekeeper/internal/daemon"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source/kube"
)

// kubeletLike fills a node the way a kubelet registers one: labels,
// annotations, capacity, the usual conditions, system info and a few
// dozen images. Without it the nodes of the memory measurement would be
// unrealistically small.
func kubeletLike(n *corev1.Node) {
	name := n.Name
	for k, v := range map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
		"node.kubernetes.io/instance-type": "Standard_D4s_v5", "topology.kubernetes.io/region": "eastus",
		"topology.kubernetes.io/zone": "eastus-1", "failure-domain.beta.kubernetes.io/region": "eastus",
		"failure-domain.beta.kubernetes.io/zone": "eastus-1", "agentpool": "nodepool1", "kubernetes.azure.com/role": "agent",
	} {
		n.Labels[k] = v
	}
	n.Annotations = map[string]string{
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"disk.csi.azure.com":"%s","file.csi.azure.com":"%s"}`, name, name),
	}
	n.Spec.ProviderID = "azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachines/" + name
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	n.Status.Capacity = corev1.ResourceList{"cpu": q("4"), "memory": q("16393940Ki"), "pods": q("110"), "ephemeral-storage": q("129886128Ki"), "hugepages-1Gi": q("0"), "hugepages-2Mi": q("0")}
	n.Status.Allocatable = corev1.ResourceList{"cpu": q("3860m"), "memory": q("12880596Ki"), "pods": q("110"), "ephemeral-storage": q("119703055367"), "hugepages-1Gi": q("0"), "hugepages-2Mi": q("0")}
	now := metav1.Now()
	for _, c := range []struct{ typ, status, reason, msg string }{
		{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"Ready", "True", "KubeletReady", "kubelet is posting ready status. AppArmor enabled"},
	} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(c.typ), Status: corev1.ConditionStatus(c.status),
			Reason: c.reason, Message: c.msg, LastHeartbeatTime: now, LastTransitionTime: now})
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: "3f1e2d4c5b6a79881726354453627180", SystemUUID: "4c4c4544-0038-4b10-8052-b2c04f4e3232", BootID: "0d3b0e3a-8f59-4b8e-9a3c-6f0c2a1b7e55",
		KernelVersion: "5.15.0-1079-azure", OSImage: "Ubuntu 22.04.5 LTS", ContainerRuntimeVersion: "containerd://1.7.27-1",
		KubeletVersion: "v1.36.3", KubeProxyVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64",
	}
	for i := range 40 {
		repo := fmt.Sprintf("mcr.microsoft.com/oss/kubernetes/component-%02d", i)
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("%s@sha256:%064x", repo, i*7919+1), repo + ":v1.36.3"},
			SizeBytes: int64(20_000_000 + i*1_000_000),
		})
	}
}

// heapAfterGC returns the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestInformerMemory measures the memory the node source holds with many
// kubelet-sized nodes in its informer, with routekeeper's trimming and,
// for comparison, without. It is a measurement for docs/performance.md,
// skipped unless ROUTEKEEPER_E2E_MEMORY_NODES is set (5000 there):
//
//	ROUTEKEEPER_E2E_MEMORY_NODES=5000 scripts/test-e2e.sh -run TestInformerMemory -v
func TestInformerMemory(t *testing.T) {
	count, _ := strconv.Atoi(os.Getenv("ROUTEKEEPER_E2E_MEMORY_NODES"))
	if count <= 0 {
		t.Skip("a measurement: set ROUTEKEEPER_E2E_MEMORY_NODES=5000 to run it")
	}
	env, ctx, client := kubeCluster(t)
	nodes := make([]node, count)
	for i := range nodes {
		nodes[i] = node{name: fmt.Sprintf("mem-%05d", i), podCIDRs: []string{fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
			ips: []string{fmt.Sprintf("10.240.%d.%d", i/250, 4+i%250)}, batch: "memory", kubelet: true}
	}
	begin := time.Now()
	createNodes(ctx, t, client, nodes, 32)
	t.Logf("created %d kubelet-sized nodes in %s", count, time.Since(begin).Round(time.Millisecond))
	one, err := client.CoreV1().Nodes().Get(ctx, nodes[0].name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := one.Marshal()
	t.Logf("one node as stored: %d bytes of protobuf, %d managed fields entries", len(raw), len(one.ManagedFields))

	// routekeeper's source: trimmed nodes.
	goroutines := runtime.NumGoroutine()
	base := heapAfterGC()
	sctx, cancel := context.WithCancel(ctx)
	src := kube.New(client, kube.Options{})
	if err := src.Start(sctx); err != nil {
		t.Fatal(err)
	}
	trimmed := heapAfterGC() - base
	got, err := src.Nodes(sctx)
	if err != nil || len(got) < count {
		t.Fatalf("Nodes: %d, %v", len(got), err)
	}
	withList := heapAfterGC() - base
	runtime.KeepAlive(got)
	got = nil
	cancel()
	runtime.KeepAlive(src)
	stopped(t, goroutines, "routekeeper's informer")

	// A plain informer keeps the whole objects.
	base = heapAfterGC()
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	inf := informers.NewSharedInformerFactory(client, 0).Core().V1().Nodes().Informer()
	infDone := make(chan struct{})
	go func() { inf.RunWithContext(pctx); close(infDone) }()
	if !cache.WaitForCacheSync(pctx.Done(), inf.HasSynced) {
		t.Fatal("the plain informer did not sync")
	}
	full := heapAfterGC() - base
	runtime.KeepAlive(inf)

	pcancel()
	<-infDone

	// The whole daemon, steady after every node has its condition: the
	// informer, the controller, the status reporter's state, metrics. The
	// cloud is an in-memory table (the fabric's own memory would blur the
	// number) without a usages API, so routekeeper keeps to Azure's
	// default of 1,000 routes per table; the table holds 1,000 routes and
	// the other nodes are RouteTableFull.
	base = heapAfterGC()
	cfg := controllerConfig("memory")
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.64.0.0/11")}
	cfg.Subnets = nil
	kc := adminConfig(env)
	kc.QPS, kc.Burst = 2000, 10000
	cloud := &memCloud{}
	r := start(t, daemon.Options{Controller: cfg, Cloud: cloud, Kube: kc, EventInterval: time.Hour})
	eventuallyEvery(t, 5*time.Minute, time.Second, func() string {
		l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: batchLabel + "=memory"})
		if err != nil {
			return err.Error()
		}
		done := 0
		for _, n := range l.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeNetworkUnavailable && (c.Reason == string(reason.RouteCreated) || c.Reason == string(reason.RouteTableFull)) {
					done++
				}
			}
		}
		if done < count {
			return fmt.Sprintf("%d of %d nodes have routekeeper's condition", done, count)
		}
		return ""
	})
	daemonHeap := heapAfterGC() - base
	if path := os.Getenv("ROUTEKEEPER_E2E_MEMORY_PROFILE"); path != "" {
		// What the daemon holds, for go tool pprof -sample_index=inuse_space.
		if err := writeHeapProfile(path); err != nil {
			t.Error(err)
		}
	}
	runtime.KeepAlive(r)
	if err := r.stop(t); err != nil {
		t.Error(err)
	}

	mib := func(b uint64) string {
		return fmt.Sprintf("%.1f MiB (%.2f KiB/node)", float64(b)/(1<<20), float64(b)/1024/float64(count))
	}
	t.Logf("heap with %d nodes: routekeeper's informer (trimmed) %s; plus one Nodes() list %s; an untrimmed informer %s; the whole daemon, steady, %s",
		count, mib(trimmed), mib(withList), mib(full), mib(daemonHeap))
	if trimmed >= full {
		t.Errorf("trimmed informer (%d bytes) is not smaller than the untrimmed one (%d bytes)", trimmed, full)
	}
}

// memCloud is an in-memory route table and subnet store for the memory
// measurement.
type memCloud struct {
	mu            sync.Mutex
	table         *route.Table
	n             int
	reads, writes int64
}

func (c *memCloud) GetRouteTable(_ context.Context, id string) (*route.Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.table == nil {
		return nil, fmt.Errorf("route table %s: %w", id, armerr.ErrNotFound)
	}
	t := *c.table
	t.Routes = slices.Clone(c.table.Routes)
	return &t, nil
}

func (c *memCloud) PutRouteTable(_ context.Context, t *route.Table, etag string) (*route.Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if c.table != nil && etag != c.table.Etag || c.table == nil && etag != "" {
		return nil, fmt.Errorf("etag: %w", armerr.ErrPreconditionFailed)
	}
	n := *t
	n.Routes = slices.Clone(t.Routes)
	for i := range n.Routes {
		n.Routes[i].ProvisioningState = "Succeeded"
	}
	c.n++
	n.Etag = strconv.Itoa(c.n)
	c.table = &n
	out := n
	out.Routes = slices.Clone(n.Routes)
	return &out, nil
}

func (c *memCloud) GetSubnet(_ context.Context, id string) (*observe.Subnet, error) {
	return nil, fmt.Errorf("subnet %s: %w", id, armerr.ErrNotFound)
}

func (c *memCloud) SetSubnetRouteTable(_ context.Context, id, _, _ string) (*observe.Subnet, error) {
	return nil, fmt.Errorf("subnet %s: %w", id, armerr.ErrNotFound)
}

func (c *memCloud) Calls() (int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads, c.writes
}

func (c *memCloud) GetVirtualNetwork(_ context.Context, id string) (*observe.VirtualNetwork, error) {
	return nil, fmt.Errorf("virtual network %s: %w", id, armerr.ErrNotFound)
}

func (c *memCloud) ListNetworkInterfaces(context.Context, string) ([]observe.NetworkInterface, error) {
	return nil, nil
}

// stopped waits until the goroutines started since there were n (what
// stopping what is named left running) have ended, so that the next heap
// measurement does not count them.
func stopped(t *testing.T, n int, what string) {
	t.Helper()
	eventually(t, 30*time.Second, func() string {
		if g := runtime.NumGoroutine(); g > n {
			return fmt.Sprintf("%s: %d goroutines, %d before it started", what, g, n)
		}
		return ""
	})
}

// writeHeapProfile writes the heap profile (after a GC) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("writing the heap profile %s: %w", path, err)
	}
	return f.Close()
}
