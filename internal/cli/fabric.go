package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/spf13/cobra"

	"github.com/routekeeper/routekeeper/internal/app"
	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/fabric/topology"
	"github.com/routekeeper/routekeeper/internal/output"
)

// defaultFabricListen is where `fabric serve` listens unless told otherwise.
const defaultFabricListen = "127.0.0.1:8400"

func (a *shell) newFabricCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Run and inspect the local fabric, an Azure Resource Manager emulator for Microsoft.Network",
		Long: `The fabric is routekeeper's local Azure: it serves the Azure Resource Manager
paths of resource groups, virtual networks, subnets, route tables and routes,
with Azure's etags, long-running operations, associations, validation errors
and throttling, closely enough that the Azure SDK cannot tell it from Azure.
Its state is a SQLite file that several processes may share.

  routekeeper fabric serve [--tls]         serve it over HTTP (or HTTPS, for az) on loopback
  routekeeper fabric apply -f topo.yaml    create resource groups, VNets, subnets, route tables
  routekeeper fabric show                  print what it holds
  routekeeper fabric incident redeploy V   break pod routing as an IaC redeploy does (also detach, swap, delete-table)
  routekeeper fabric az [--apply]          point the Azure CLI at a served fabric
  routekeeper fabric serve --dataplane     also forward packets by its routes (Linux, root)
  routekeeper fabric probe SRC DST         send packets through that data plane, report the loss

See docs/fabric.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newFabricServeCmd(), a.newFabricApplyCmd(), a.newFabricShowCmd(), a.newFabricIncidentCmd(), a.newFabricAzCmd(),
		a.newFabricProbeCmd(), a.newFabricDataplaneCmd())
	return cmd
}

// fabricServeOptions are the flags of `fabric serve`.
type fabricServeOptions struct {
	state       string
	memory      bool
	listen      string
	allowRemote bool
	opDuration  time.Duration
	routeLimit  int
	tables      int
	pageSize    int
	seed        uint64
	tls         bool
	faults      fabric.Faults
	dataplane   dataplaneOptions
}

func (a *shell) newFabricServeCmd() *cobra.Command {
	var o fabricServeOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the fabric over HTTP (loopback only unless --allow-remote)",
		Long: `serve runs the fabric as an HTTP server until interrupted. Point the Azure SDK
(or routekeeper with ROUTEKEEPER_ENDPOINT) at the printed endpoint; any bearer
token is accepted. With --tls it serves HTTPS with a certificate of its own CA,
made once in the state directory (the Azure CLI needs it: see routekeeper
fabric az). Faults are injected with the flags below or at runtime with
GET/PUT <endpoint>/_fabric/faults.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.fabricServe(cmd.Context(), cmd, &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.state, "state", "", "state file (default $XDG_STATE_HOME/routekeeper/fabric.db or ~/.local/state/routekeeper/fabric.db)")
	f.BoolVar(&o.memory, "memory", false, "keep the state in memory: nothing survives the process")
	f.StringVar(&o.listen, "listen", defaultFabricListen, "address to listen on (host:port; port 0 picks a free one)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a non-loopback --listen address (the fabric has no real authentication)")
	f.DurationVar(&o.opDuration, "operation-duration", 500*time.Millisecond, "how long long-running operations stay Updating/Deleting (0: at once, still answered as Azure does)")
	f.IntVar(&o.routeLimit, "route-limit", fabric.DefaultRouteLimit, "routes allowed per route table, as the usages API reports it (Azure's default since May 2026; 400 plays an older subscription)")
	f.IntVar(&o.tables, "tables-per-subscription", fabric.DefaultTablesLimit, "route tables a subscription may hold in one location (Azure's default since May 2026; 200 plays an older subscription)")
	f.IntVar(&o.pageSize, "page-size", fabric.DefaultPageSize, "items per list page before a nextLink")
	f.BoolVar(&o.tls, "tls", false, "serve HTTPS with a certificate of the fabric's own CA, made once in the state directory (az needs it)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the fault-injection randomness (0: random)")
	f.DurationVar(&o.faults.Latency, "latency", 0, "latency added to every ARM request")
	f.IntVar(&o.faults.WriteBucket, "write-bucket", 0, "token bucket of writes per subscription; 429 when empty (ARM: 200; 0: no throttling)")
	f.Float64Var(&o.faults.WriteRefillPerSecond, "write-refill", 10, "write tokens added per second")
	f.IntVar(&o.faults.ReadBucket, "read-bucket", 0, "token bucket of reads per subscription (ARM: 250; 0: no throttling)")
	f.Float64Var(&o.faults.ReadRefillPerSecond, "read-refill", 25, "read tokens added per second")
	f.Float64Var(&o.faults.ErrorRate, "error-rate", 0, "probability that a request fails with 500, 502 or 503 before taking effect")
	f.Float64Var(&o.faults.FailOperations, "fail-operations", 0, "probability that a long-running operation ends Failed")
	f.Float64Var(&o.faults.IntruderRate, "intruder-rate", 0, "probability that another writer changes a route table right after a GET of it")
	f.Float64Var(&o.faults.LoseAnswers, "lose-answers", 0, "probability that a write loses its answer after the fabric carried it out: the client's connection is reset, the write took effect")
	o.dataplane.register(f)
	return cmd
}

// checkLoopback refuses an address that is not loopback.
func checkLoopback(listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("flag --listen: %q is not host:port: %v", listen, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("flag --listen: %q: port %q is not a number", listen, port)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		what := fmt.Sprintf("%q is not a loopback address", host)
		if host == "" {
			what = "an empty host listens on every interface"
		}
		return fmt.Errorf("flag --listen: %s; the fabric accepts any token, so it listens on loopback only unless --allow-remote is given", what)
	}
	return nil
}

func (a *shell) fabricServe(ctx context.Context, cmd *cobra.Command, o *fabricServeOptions) error {
	if o.memory && cmd.Flags().Changed("state") {
		return usageErrorf("flags --memory and --state: give one or the other")
	}
	if !o.allowRemote {
		if err := checkLoopback(o.listen); err != nil {
			return usageError(err)
		}
	}
	if o.opDuration < 0 {
		return usageErrorf("flag --operation-duration: %s must not be negative", o.opDuration)
	}
	if o.routeLimit < 1 {
		return usageErrorf("flag --route-limit: %d must be at least 1", o.routeLimit)
	}
	if o.tables < 1 {
		return usageErrorf("flag --tables-per-subscription: %d must be at least 1", o.tables)
	}
	if o.pageSize < 1 {
		return usageErrorf("flag --page-size: %d must be at least 1", o.pageSize)
	}
	if err := o.faults.Validate(); err != nil {
		return usageError(faultFlagError(err))
	}
	s := app.FabricServer{
		State: o.state, Memory: o.memory, Listen: o.listen, TLS: o.tls,
		Options: fabric.Options{
			OperationDuration: o.opDuration, RouteLimit: o.routeLimit, TablesLimit: o.tables, PageSize: o.pageSize,
			Faults: o.faults, Logger: a.log, Seed: o.seed,
		},
	}
	if s.State == "" && !s.Memory {
		s.State = fabric.StatePath(a.getenv)
	}
	dp, err := o.dataplane.parse(s.State, s.Memory)
	if err != nil {
		return err
	}
	s.Dataplane = dp
	return a.app.ServeFabric(ctx, s, func(sv app.Serving) { a.fabricBanner(o, sv, dp) })
}

// fabricBanner says what `fabric serve` serves and how to reach it. It is
// written in one Write: a reader that wakes at its first line (a script, a
// test waiting for the endpoint) sees all of it.
func (a *shell) fabricBanner(o *fabricServeOptions, sv app.Serving, dp *app.Dataplane) {
	w, endpoint := new(bytes.Buffer), sv.Endpoint
	fmt.Fprintf(w, "routekeeper fabric listening on %s\n", endpoint)
	fmt.Fprintf(w, "  state:       %s\n", sv.Where)
	fmt.Fprintf(w, "  operations:  %s each\n", o.opDuration)
	fmt.Fprintf(w, "  limits:      %d routes per route table, %d route tables per subscription and location (the usages API reports them)\n", o.routeLimit, o.tables)
	fmt.Fprintf(w, "  faults:      %s\n", describeFaults(o.faults))
	if o.tls {
		fmt.Fprintf(w, "  TLS CA:      %s (server certificate %s)\n", sv.TLS.CA, sv.TLS.Cert)
	}
	if dp != nil {
		fmt.Fprintf(w, "  data plane:  namespaces %s-*; nodes from %s; propagation delay %s\n", dp.Prefix, dp.Nodes, dp.PropagationDelay)
		fmt.Fprintf(w, "               routekeeper fabric probe --dataplane-prefix %s SRC DST\n", dp.Prefix)
	}
	fmt.Fprintf(w, "Clients:\n")
	fmt.Fprintf(w, "  export ROUTEKEEPER_ENDPOINT=%s\n", endpoint)
	if o.tls {
		fmt.Fprintf(w, "  export REQUESTS_CA_BUNDLE=%s\n", sv.TLS.CA)
		fmt.Fprintf(w, "  export SSL_CERT_FILE=%s\n", sv.TLS.CA)
		fmt.Fprintf(w, "  az:        routekeeper fabric az --endpoint %s\n", endpoint)
		fmt.Fprintf(w, "  azurerm:   ARM_METADATA_HOSTNAME=%s ARM_TENANT_ID=%s ARM_SUBSCRIPTION_ID=%s\n",
			strings.TrimPrefix(endpoint, "https://"), fabric.DefaultTenant, fabric.DefaultSubscription)
		fmt.Fprintf(w, "             ARM_CLIENT_ID=<any> ARM_CLIENT_SECRET=<any> (docs/iac.md)\n")
	}
	fmt.Fprintf(w, "  Azure SDK: cloud.ResourceManager endpoint %s, audience https://management.azure.com,\n", endpoint)
	fmt.Fprintf(w, "             any bearer token, InsecureAllowCredentialWithHTTP, DisableRPRegistration;\n")
	fmt.Fprintf(w, "             any subscription ID (routekeeper's default: %s)\n", fabric.DefaultSubscription)
	fmt.Fprintf(w, "  faults at runtime: GET/PUT %s/_fabric/faults\n", endpoint)
	if _, err := a.stdout.Write(w.Bytes()); err != nil {
		a.log.Warn("printing the fabric's banner", "err", err)
	}
}

// faultFlags are the `fabric serve` flags of the Faults fields, by their
// JSON name (fabric.InvalidFaultError's Field).
var faultFlags = map[string]string{
	"latency":     "latency",
	"writeBucket": "write-bucket", "writeRefillPerSecond": "write-refill",
	"readBucket": "read-bucket", "readRefillPerSecond": "read-refill",
	"errorRate": "error-rate", "failOperations": "fail-operations",
	"intruderRate": "intruder-rate", "loseAnswers": "lose-answers",
}

// faultFlagError names the flag (and the fault) of an invalid fault
// setting: "flag --lose-answers: 1.5 is not a probability between 0 and 1
// (fault loseAnswers)".
func faultFlagError(err error) error {
	var fe *fabric.InvalidFaultError
	if errors.As(err, &fe) {
		if flag, ok := faultFlags[fe.Field]; ok {
			return fmt.Errorf("flag --%s: %s (fault %s)", flag, fe.Problem, fe.Field)
		}
	}
	return fmt.Errorf("fault flags: %w", err)
}

func describeFaults(f fabric.Faults) string {
	var parts []string
	if f.Latency > 0 {
		parts = append(parts, "latency "+f.Latency.String())
	}
	if f.WriteBucket > 0 {
		parts = append(parts, fmt.Sprintf("write bucket %d refilling %g/s", f.WriteBucket, f.WriteRefillPerSecond))
	}
	if f.ReadBucket > 0 {
		parts = append(parts, fmt.Sprintf("read bucket %d refilling %g/s", f.ReadBucket, f.ReadRefillPerSecond))
	}
	if f.ErrorRate > 0 {
		parts = append(parts, fmt.Sprintf("error rate %g", f.ErrorRate))
	}
	if f.FailOperations > 0 {
		parts = append(parts, fmt.Sprintf("failed operations %g", f.FailOperations))
	}
	if f.IntruderRate > 0 {
		parts = append(parts, fmt.Sprintf("intruder %g", f.IntruderRate))
	}
	if f.LoseAnswers > 0 {
		parts = append(parts, fmt.Sprintf("lost answers %g (writes carried out, then the connection reset)", f.LoseAnswers))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// fabricTarget is the fabric a command talks to: a state file served in
// process, or a running server; --config takes either from a routekeeper
// config (cloud.local.state, cloud.local.endpoint).
type fabricTarget struct {
	state    string
	endpoint string
	config   string
}

func (t *fabricTarget) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.state, "state", "", "state file to work on in process (default: the fabric's default state file)")
	cmd.Flags().StringVar(&t.endpoint, "endpoint", "", "base URL of a running fabric (routekeeper fabric serve) instead of a state file")
	cmd.Flags().StringVar(&t.config, "config", "", "routekeeper config whose cloud.local.state or cloud.local.endpoint names the fabric (flags win)")
}

// resolve fills state and endpoint from --config where no flag gave them.
func (t *fabricTarget) resolve(cmd *cobra.Command) error {
	if t.config == "" {
		return nil
	}
	cfg, err := config.Load(t.config)
	if err != nil {
		return usageError(err)
	}
	if cfg.Cloud.Type == config.CloudAzure {
		return usageErrorf("config %s: cloud.type is azure; the fabric commands work on the local fabric only", t.config)
	}
	if cmd.Flags().Changed("state") || cmd.Flags().Changed("endpoint") {
		return nil
	}
	t.state, t.endpoint = cfg.Cloud.Local.State, cfg.Cloud.Local.Endpoint
	return nil
}

// open returns SDK options that reach the fabric and a function that
// releases it. With mustExist, a missing state file is an error rather
// than an empty fabric.
func (t *fabricTarget) open(ctx context.Context, a *shell, cmd *cobra.Command, mustExist bool) (*arm.ClientOptions, func(), error) {
	if err := t.resolve(cmd); err != nil {
		return nil, nil, err
	}
	if t.endpoint != "" {
		if cmd.Flags().Changed("state") && cmd.Flags().Changed("endpoint") {
			return nil, nil, usageErrorf("flags --state and --endpoint: give one or the other")
		}
		opts, err := fabric.EndpointClientOptions(t.endpoint, a.app.FabricCA())
		if err != nil {
			return nil, nil, usageErrorf("flag --endpoint: %w", err)
		}
		return opts, func() {}, nil
	}
	state := t.state
	if state == "" {
		state = fabric.StatePath(a.getenv)
	}
	if mustExist {
		if _, err := os.Stat(state); err != nil {
			return nil, nil, fmt.Errorf("fabric state %s: %w (nothing to show: run routekeeper fabric apply or serve first)", state, err)
		}
	}
	store, err := fabric.Open(ctx, state)
	if err != nil {
		return nil, nil, err
	}
	srv := fabric.New(store, fabric.Options{Logger: a.log})
	return srv.ClientOptions(), func() { store.Close() }, nil
}

func (a *shell) newFabricApplyCmd() *cobra.Command {
	var target fabricTarget
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f TOPOLOGY",
		Short: "Create resource groups, virtual networks, subnets and route tables from a topology file",
		Long: `apply makes the fabric hold a topology file: it creates what is missing and
updates the declared properties that differ, and keeps everything the file does
not declare (other routes, other tags, a subnet's route table association).
Applying the same file again writes nothing. The format is in docs/fabric.md:

  location: eastus
  resourceGroups:
    - name: kubernetes
      virtualNetworks:
        - name: kubernetes-vnet
          addressPrefixes: [10.240.0.0/16]
          subnets:
            - {name: kubernetes-subnet, addressPrefix: 10.240.0.0/24, routeTable: kubernetes-routes}
      routeTables:
        - name: kubernetes-routes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("flag -f/--file: the topology file is required")
			}
			top, err := topology.LoadTopology(file)
			if err != nil {
				return usageError(err)
			}
			opts, release, err := target.open(cmd.Context(), a, cmd, false)
			if err != nil {
				return err
			}
			defer release()
			res, err := topology.Apply(cmd.Context(), top, opts, identity.Credential{})
			if perr := a.printApply(res); perr != nil {
				return perr
			}
			if err != nil {
				return fmt.Errorf("applying %s: %w", file, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "topology file (YAML or JSON)")
	target.register(cmd)
	return cmd
}

func (a *shell) printApply(res topology.ApplyResult) error {
	if res.Changes == nil {
		res.Changes = []topology.Change{}
	}
	if err := a.print(res, func() output.Table {
		t := output.Table{Header: []string{"Action", "Kind", "ResourceGroup", "Name", "Detail"}}
		for _, c := range res.Changes {
			rg, name := splitID(c.ID)
			t.Rows = append(t.Rows, []string{c.Action, c.Kind, rg, name, c.Detail})
		}
		return t
	}); err != nil {
		return err
	}
	if a.humanOutput() {
		_, err := fmt.Fprintf(a.stdout, "\n%d created, %d updated, %d unchanged (%d writes)\n",
			res.Count(topology.ActionCreate), res.Count(topology.ActionUpdate), res.Count(topology.ActionUnchanged), res.Writes)
		return err
	}
	return nil
}

// splitID returns the resource group of an ARM ID and the resource's path
// below it: kubernetes, kubernetes-vnet/kubernetes-subnet.
func splitID(id string) (rg, name string) {
	if scope, ok := armid.ScopeOf(id, "Microsoft.Authorization"); ok {
		// A lock, role or policy: the group of its scope, and its name.
		rg, _ = splitID(scope)
		return rg, armid.Name(id)
	}
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) >= 4 && strings.EqualFold(segs[2], "resourceGroups") {
		rg = segs[3]
	}
	switch {
	case len(segs) == 4:
		return rg, segs[3]
	case len(segs) >= 8:
		parts := []string{segs[7]}
		for i := 9; i < len(segs); i += 2 {
			parts = append(parts, segs[i])
		}
		return rg, strings.Join(parts, "/")
	}
	return rg, id
}

func (a *shell) newFabricShowCmd() *cobra.Command {
	var target fabricTarget
	var subs []string
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print what the fabric holds: resource groups, virtual networks and subnets, route tables and routes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, release, err := target.open(cmd.Context(), a, cmd, true)
			if err != nil {
				return err
			}
			defer release()
			st, err := topology.Snapshot(cmd.Context(), opts, identity.Credential{}, subs...)
			if err != nil {
				return err
			}
			if !a.humanOutput() {
				return a.print(st, nil)
			}
			return writeState(a.stdout, st)
		},
	}
	target.register(cmd)
	cmd.Flags().StringSliceVar(&subs, "subscription", nil, "subscriptions to show (default: every subscription the fabric holds)")
	return cmd
}

// writeState prints a fabric's state as az-style tables, one per kind.
func writeState(w io.Writer, st *network.State) error {
	sections := []struct {
		title string
		t     output.Table
	}{
		{"Resource groups", stateRGTable(st)},
		{"Virtual networks", stateVNetTable(st)},
		{"Route tables", stateTableTable(st)},
		{"Routes", stateRouteTable(st)},
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, s.title)
		if len(s.t.Rows) == 0 {
			fmt.Fprintln(w, "(none)")
			continue
		}
		if err := output.WriteTable(w, s.t); err != nil {
			return err
		}
	}
	return nil
}

func stateRGTable(st *network.State) output.Table {
	t := output.Table{Header: []string{"Name", "Location", "Subscription", "ProvisioningState"}}
	for _, rg := range st.ResourceGroups {
		t.Rows = append(t.Rows, []string{rg.Name, rg.Location, rg.Subscription, rg.ProvisioningState})
	}
	return t
}

// shortTable names a route table by its name when it is in the resource
// group rg, by resource group and name otherwise.
func shortTable(id, rg string) string {
	trg, name := splitID(id)
	if strings.EqualFold(trg, rg) {
		return name
	}
	return trg + "/" + name
}

func stateVNetTable(st *network.State) output.Table {
	t := output.Table{Header: []string{"ResourceGroup", "VirtualNetwork", "AddressPrefixes", "Subnet", "SubnetPrefixes", "RouteTable", "ProvisioningState"}}
	for _, v := range st.VirtualNetworks {
		if len(v.Subnets) == 0 {
			t.Rows = append(t.Rows, []string{v.ResourceGroup, v.Name, strings.Join(v.AddressPrefixes, ","), "", "", "", v.ProvisioningState})
		}
		for _, sn := range v.Subnets {
			rt := ""
			if sn.RouteTable != "" {
				rt = shortTable(sn.RouteTable, v.ResourceGroup)
			}
			t.Rows = append(t.Rows, []string{v.ResourceGroup, v.Name, strings.Join(v.AddressPrefixes, ","), sn.Name,
				strings.Join(sn.AddressPrefixes, ","), rt, sn.ProvisioningState})
		}
	}
	return t
}

func stateTableTable(st *network.State) output.Table {
	t := output.Table{Header: []string{"ResourceGroup", "Name", "Location", "Routes", "Subnets", "ProvisioningState"}}
	for _, rt := range st.RouteTables {
		var subnets []string
		for _, id := range rt.Subnets {
			rg, name := splitID(id)
			if !strings.EqualFold(rg, rt.ResourceGroup) {
				name = rg + "/" + name
			}
			subnets = append(subnets, name)
		}
		t.Rows = append(t.Rows, []string{rt.ResourceGroup, rt.Name, rt.Location, strconv.Itoa(len(rt.Routes)),
			strings.Join(subnets, ","), rt.ProvisioningState})
	}
	return t
}

func stateRouteTable(st *network.State) output.Table {
	t := output.Table{Header: []string{"ResourceGroup", "RouteTable", "Name", "AddressPrefix", "NextHopType", "NextHopIpAddress", "ProvisioningState"}}
	for _, rt := range st.RouteTables {
		for _, r := range rt.Routes {
			t.Rows = append(t.Rows, []string{rt.ResourceGroup, rt.Name, r.Name, r.AddressPrefix, r.NextHopType, r.NextHopIPAddress, r.ProvisioningState})
		}
	}
	return t
}
