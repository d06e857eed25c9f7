package scenario

import (
	"context"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// The access pre-checks a verdict made (doctor's permission check, when
// the observation read access) are shown, each refused or unknown need on
// a line; the allowed ones are not. No script reads access (a cloud in
// memory answers no permissions API), so the lines are checked here.
func TestRenderAccess(t *testing.T) {
	c, err := ParseCloud(strings.Split("vnet v 10.240.0.0/16\nsubnet nodes 10.240.0.0/24 table=rt\ntable rt claim=kthw", "\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := observe.Observe(context.Background(), c, observe.Scope{Table: TableID("rt"), Subnets: []string{SubnetID(DefaultVNet, "nodes")}, Networks: true})
	v := verdict.Judge(o, DefaultConfig().Desired, nil)
	need := func(action, scope, what string) verdict.Need {
		return verdict.Need{Action: action, Scope: scope, For: what}
	}
	v.Access = []verdict.Access{
		{Need: need(verdict.ActionTableRead, TableID("rt"), "read route table rt"), Allowed: true},
		{Need: need(verdict.ActionTableWrite, TableID("rt"), "write the node routes into rt")},
		{Need: need(verdict.ActionSubnetWrite, SubnetID("v", "nodes"), "keep subnet nodes associated with rt"), Unknown: "the permissions at this scope were not read"},
	}
	got := Render(v, true)
	for _, want := range []string{
		"access refused: Microsoft.Network/routeTables/write on routeTables/rt (to write the node routes into rt): the identity lacks Microsoft.Network/routeTables/write on routeTables/rt",
		"access unknown: Microsoft.Network/virtualNetworks/subnets/write on virtualNetworks/v/subnets/nodes (to keep subnet nodes associated with rt): the permissions at this scope were not read",
	} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("render lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "routeTables/read") {
		t.Errorf("an allowed need is shown:\n%s", got)
	}
}
