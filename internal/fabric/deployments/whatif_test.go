package deployments_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armdeployments"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// whatIf runs a what-if with the SDK's poller.
func (e *env) whatIf(t *testing.T, template map[string]any, params map[string]any, mode armdeployments.DeploymentMode) *armdeployments.WhatIfOperationResult {
	t.Helper()
	ctx := context.Background()
	p, err := e.deployments.BeginWhatIf(ctx, "kubernetes", "whatif", armdeployments.DeploymentWhatIf{Properties: &armdeployments.DeploymentWhatIfProperties{
		Template: template, Parameters: values(params), Mode: to.Ptr(mode)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PollUntilDone(ctx, poll)
	if err != nil {
		t.Fatal(err)
	}
	return &res.WhatIfOperationResult
}

// summary is each change as "changeType name", and the delta's paths.
func summary(r *armdeployments.WhatIfOperationResult) (string, []string) {
	var changes, paths []string
	for _, c := range r.Properties.Changes {
		id := *c.ResourceID
		changes = append(changes, string(*c.ChangeType)+" "+id[strings.LastIndex(id, "/")+1:])
		var walk func(prefix string, ds []*armdeployments.WhatIfPropertyChange)
		walk = func(prefix string, ds []*armdeployments.WhatIfPropertyChange) {
			for _, d := range ds {
				p := prefix + *d.Path + ":" + string(*d.PropertyChangeType)
				paths = append(paths, p)
				walk(p+" > ", d.Children)
			}
		}
		walk("", c.Delta)
	}
	return strings.Join(changes, ", "), paths
}

// What-if shows each hazard as Azure does — the VNet Modify with the
// subnet's routeTable Delete, the table's routes replaced, the table
// Delete in Complete mode — and each fix as NoChange.
func TestWhatIf(t *testing.T) {
	e := newEnv(t, fabric.Options{}, fabrictest.KTHW)
	inc, complete := armdeployments.DeploymentModeIncremental, armdeployments.DeploymentModeComplete
	if _, err := e.deploy(t, "routes", example(t, "route-table-inline-routes.json"), nil, inc); err != nil {
		t.Fatal(err)
	}
	e.keepRoutes(t)

	for _, tc := range []struct {
		name     string
		template string
		params   map[string]any
		mode     armdeployments.DeploymentMode
		changes  string
		paths    []string
	}{
		{"hazard 1: the inline subnet without routeTable", "vnet-inline-subnet.json", nil, inc,
			"Ignore kubernetes-routes, Modify kubernetes-vnet",
			[]string{"properties.subnets:Array", "properties.subnets:Array > 0:Modify", "properties.subnets:Array > 0:Modify > properties.routeTable:Delete"}},
		{"Complete mode also deletes the table", "vnet-inline-subnet.json", nil, complete,
			"Delete kubernetes-routes, Modify kubernetes-vnet",
			[]string{"properties.subnets:Array", "properties.subnets:Array > 0:Modify", "properties.subnets:Array > 0:Modify > properties.routeTable:Delete"}},
		{"fix 1: the table passed in", "fix-route-table-parameter.json", map[string]any{"routeTableId": fabrictest.KTHWTable}, inc,
			"Ignore kubernetes-routes, NoChange kubernetes-vnet", nil},
		{"fix 2: the nested template's reference()", "fix-nested-reference.json", nil, inc,
			"Ignore kubernetes-routes, NoChange kubernetes-vnet, Deploy current-subnet", nil},
		{"hazard 2: the table's inline routes", "route-table-inline-routes.json", nil, inc,
			"Modify kubernetes-routes, Ignore kubernetes-vnet",
			[]string{"properties.routes:Array", "properties.routes:Array > 1:Delete", "properties.routes:Array > 2:Delete"}},
		{"fix 3: the route on its own", "fix-route-child-resource.json", nil, inc,
			"Ignore kubernetes-routes, NoChange default-egress, Ignore kubernetes-vnet", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.whatIf(t, example(t, tc.template), tc.params, tc.mode)
			if *r.Status != "Succeeded" {
				t.Fatalf("status %s: %+v", *r.Status, r.Error)
			}
			changes, paths := summary(r)
			if changes != tc.changes || strings.Join(paths, "\n") != strings.Join(tc.paths, "\n") {
				b, _ := json.MarshalIndent(r.Properties.Changes, "", "  ")
				t.Errorf("changes %s\ndelta:\n%s\nwant %s\n%s\n%s", changes, strings.Join(paths, "\n"), tc.changes, strings.Join(tc.paths, "\n"), b)
			}
		})
	}
	// What-if changed nothing.
	if rt := e.routeTableOf(t); !strings.EqualFold(rt, fabrictest.KTHWTable) {
		t.Errorf("after the what-ifs the subnet's table is %q", rt)
	}
}
