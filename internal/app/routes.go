package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
)

// KeptTable is the route table routekeeper run keeps for the table of the
// configuration that sel names ("" or the main one, or a mirror, by name
// or ARM ID): the configured one, or the table it was migrated to, or the
// one a followed swap moved to, as read through run's own observation and
// decision (no writes).
func (a *App) KeptTable(ctx context.Context, cfg *config.Config, sel string) (*route.Table, error) {
	conn, err := a.Connect(ctx, cfg, ConnectOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ccfg, err := ControllerConfig(ctx, cfg, conn.Client)
	if err != nil {
		return nil, err
	}
	ms, err := Mirrors(ctx, cfg, conn.Client, ccfg)
	if err != nil {
		return nil, err
	}
	if ccfg, err = SelectTable(cfg, ccfg, ms, sel); err != nil {
		return nil, err
	}
	configured := ccfg.RouteTableID
	// The nodes tell whether a subnet's table lacks the node routes (then
	// run re-associates ours); without them only the table is decided on.
	var nodes []source.Node
	if src, err := a.NodeSource(ctx, cfg, conn.Client); err == nil {
		if nodes, err = src.Nodes(ctx); err != nil {
			a.Log.Warn("the nodes could not be read; deciding without them", "err", err)
		}
	}
	res := controller.New(ccfg, conn.Client, nil, a.Log).Inspect(ctx, nodes, observe.Scope{})
	d := res.Decision
	switch {
	case d == nil:
		return nil, res.Err
	case d.TableErr != nil:
		return nil, d.TableErr // it names the operation and the table
	case res.Table == nil:
		return nil, fmt.Errorf("route table %s does not exist (%s)", d.Table, CreateNote(d))
	}
	if !armid.Same(d.Table, ccfg.RouteTableID) {
		a.Log.Info("listing the table routekeeper run keeps, not the configured one", "configured", configured, "table", d.Table, "why", string(d.Switch))
	}
	return res.Table, nil
}

// CreateNote says what run would do about a missing table.
func CreateNote(d *assoc.Decision) string {
	if d.Create {
		return "routekeeper run creates it"
	}
	return "routekeeper run will not create it: " + d.CreateBlocked
}

// SelectTable returns the controller configuration of the table sel
// names: "" or the main table (by name or ID), or a mirror (by name or
// ID).
func SelectTable(cfg *config.Config, main controller.Config, ms []controller.Mirror, sel string) (controller.Config, error) {
	if sel == "" || armid.Matches(cfg.RouteTable.ID, sel) {
		return main, nil
	}
	var names []string
	for _, m := range ms {
		if armid.Matches(m.RouteTableID, sel) {
			return controller.MirrorConfig(main, m), nil
		}
		names = append(names, controller.TableName(m.RouteTableID))
	}
	known := controller.TableName(cfg.RouteTable.ID) + " (the main table)"
	if len(names) > 0 {
		known += ", " + strings.Join(names, ", ")
	}
	return main, BadInputf("--table %q: not a route table of the configuration; want one of %s, by name or ARM ID", sel, known)
}
