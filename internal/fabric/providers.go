package fabric

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Resource provider registration, as ARM does it: every subscription has a
// registration state per resource provider namespace; `POST
// /subscriptions/{sub}/providers/{ns}/register` moves a namespace from
// NotRegistered through Registering to Registered (after the fabric's
// operation duration). The azurerm provider lists the providers and
// registers the ones its `resource_provider_registrations` set needs.
// Microsoft.Network and Microsoft.Resources, which the fabric serves, are
// always Registered; so are the namespaces Azure registers for every new
// subscription. The states live in the state file (table
// provider_registrations), so every process sharing it agrees.

// providerNamespaces are the namespaces the fabric lists: the ones it
// serves, the ones registered by default in Azure, and the others the
// azurerm provider's registration sets name. Registering one the fabric
// does not serve changes only its state.
var providerNamespaces = []string{
	"Github.Network", "Microsoft.AVS", "Microsoft.AlertsManagement", "Microsoft.ApiManagement",
	"Microsoft.AppConfiguration", "Microsoft.AppPlatform", "Microsoft.Authorization", "Microsoft.Automation",
	"Microsoft.Billing", "Microsoft.Blueprint", "Microsoft.BotService", "Microsoft.Cache", "Microsoft.Cdn",
	"Microsoft.ClassicSubscription", "Microsoft.CognitiveServices", "Microsoft.Commerce", "Microsoft.Compute",
	"Microsoft.Consumption", "Microsoft.ContainerInstance", "Microsoft.ContainerRegistry",
	"Microsoft.ContainerService", "Microsoft.CostManagement", "Microsoft.CustomProviders",
	"Microsoft.DBforMariaDB", "Microsoft.DBforMySQL", "Microsoft.DBforPostgreSQL", "Microsoft.Dashboard",
	"Microsoft.DataFactory", "Microsoft.DataLakeAnalytics", "Microsoft.DataLakeStore", "Microsoft.DataMigration",
	"Microsoft.DataProtection", "Microsoft.Databricks", "Microsoft.DesktopVirtualization", "Microsoft.DevTestLab",
	"Microsoft.Devices", "Microsoft.DocumentDB", "Microsoft.EventGrid", "Microsoft.EventHub", "Microsoft.Features",
	"Microsoft.GuestConfiguration", "Microsoft.HDInsight", "Microsoft.HealthcareApis", "Microsoft.IoTCentral",
	"Microsoft.KeyVault", "Microsoft.Kusto", "Microsoft.Logic", "Microsoft.MachineLearningServices",
	"Microsoft.Maintenance", "Microsoft.ManagedIdentity", "Microsoft.ManagedServices", "Microsoft.Management",
	"Microsoft.Maps", "Microsoft.MarketplaceOrdering", "Microsoft.MixedReality", "Microsoft.Monitor",
	"Microsoft.Network", "Microsoft.NotificationHubs", "Microsoft.OperationalInsights",
	"Microsoft.OperationsManagement", "Microsoft.PolicyInsights", "Microsoft.Portal", "Microsoft.PowerBIDedicated",
	"Microsoft.RecoveryServices", "Microsoft.Relay", "Microsoft.ResourceGraph", "Microsoft.ResourceHealth",
	"Microsoft.Resources", "Microsoft.Search", "Microsoft.Security", "Microsoft.SecurityInsights",
	"Microsoft.SerialConsole", "Microsoft.ServiceBus", "Microsoft.ServiceFabric", "Microsoft.SignalRService",
	"Microsoft.Sql", "Microsoft.Storage", "Microsoft.StreamAnalytics", "Microsoft.Web", "microsoft.insights",
	"microsoft.support",
}

// defaultRegistered are the namespaces Azure registers in every new
// subscription (learn.microsoft.com, "Azure resource providers and types":
// registered by default), plus the two the fabric serves.
var defaultRegistered = []string{
	"Microsoft.Authorization", "Microsoft.Billing", "Microsoft.ClassicSubscription", "Microsoft.Commerce",
	"Microsoft.Consumption", "Microsoft.CostManagement", "Microsoft.Features", "Microsoft.MarketplaceOrdering",
	"Microsoft.Network", "Microsoft.Portal", "Microsoft.ResourceGraph", "Microsoft.ResourceHealth",
	"Microsoft.Resources", "Microsoft.SerialConsole", "microsoft.support",
}

// Registration states, as ARM spells them.
const (
	regNotRegistered = "NotRegistered"
	regRegistering   = "Registering"
	regRegistered    = "Registered"
)

const registrationsSchema = `CREATE TABLE IF NOT EXISTS provider_registrations (
	sub_key    TEXT NOT NULL,    -- lower(subscription ID)
	namespace  TEXT NOT NULL,    -- lower(namespace)
	state      TEXT NOT NULL,    -- Registering | Registered
	settles_at INTEGER NOT NULL, -- unix nanoseconds: Registering becomes Registered
	PRIMARY KEY (sub_key, namespace)
)`

// canonicalNamespace is the namespace's spelling in the catalogue.
func canonicalNamespace(ns string) (string, bool) {
	for _, n := range providerNamespaces {
		if strings.EqualFold(n, ns) {
			return n, true
		}
	}
	return "", false
}

// registrationState is a namespace's state in a subscription at now.
func registrationState(tx *store.Txn, sub, ns string, now int64) (string, error) {
	if slices.ContainsFunc(defaultRegistered, func(d string) bool { return strings.EqualFold(d, ns) }) {
		return regRegistered, nil
	}
	var exists int
	err := tx.QueryRowContext(tx.Ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'provider_registrations'`).Scan(&exists)
	if err != nil {
		return "", fmt.Errorf("reading provider registrations: %w", err)
	}
	if exists == 0 {
		return regNotRegistered, nil
	}
	var state string
	var settles int64
	err = tx.QueryRowContext(tx.Ctx, `SELECT state, settles_at FROM provider_registrations WHERE sub_key = ? AND namespace = ?`,
		api.Key(sub), api.Key(ns)).Scan(&state, &settles)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return regNotRegistered, nil
	case err != nil:
		return "", fmt.Errorf("reading the registration of %s: %w", ns, err)
	case state == regRegistering && settles <= now:
		return regRegistered, nil
	}
	return state, nil
}

// namespaceBody is a provider as GET /providers/{ns} returns it.
func namespaceBody(sub, ns, state string) map[string]any {
	b := providerBody(sub, ns)
	if b == nil {
		b = map[string]any{
			"id": "/subscriptions/" + sub + "/providers/" + ns, "namespace": ns,
			"registrationPolicy": "RegistrationRequired", "resourceTypes": []any{},
		}
	}
	b["registrationState"] = state
	return b
}

func errUnknownNamespace(ns string) *api.Error {
	return api.NewError(http.StatusNotFound, "InvalidResourceNamespace",
		"The resource namespace '%s' is invalid: the routekeeper fabric does not know it (docs/fabric.md lists its providers).", ns)
}

func (s *Server) getProvider(ctx context.Context, q *api.Request) (*api.Response, error) {
	sub := q.Segs[1]
	ns, ok := canonicalNamespace(q.Segs[3])
	if !ok {
		return nil, errUnknownNamespace(q.Segs[3])
	}
	var body map[string]any
	err := s.net.View(ctx, func(tx *store.Txn) error {
		state, err := registrationState(tx, sub, ns, s.now().UnixNano())
		body = namespaceBody(sub, ns, state)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: body}, nil
}

func (s *Server) listProviders(ctx context.Context, q *api.Request) (*api.Response, error) {
	sub := q.Segs[1]
	value := make([]any, 0, len(providerNamespaces))
	err := s.net.View(ctx, func(tx *store.Txn) error {
		now := s.now().UnixNano()
		for _, ns := range providerNamespaces {
			state, err := registrationState(tx, sub, ns, now)
			if err != nil {
				return err
			}
			value = append(value, namespaceBody(sub, ns, state))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: map[string]any{"value": value}}, nil
}

// registerProvider serves POST /subscriptions/{sub}/providers/{ns}/register:
// 200 with the provider, Registering until the operation duration has
// passed (at once with a duration of 0), then Registered.
func (s *Server) registerProvider(ctx context.Context, q *api.Request) (*api.Response, error) {
	sub := q.Segs[1]
	ns, ok := canonicalNamespace(q.Segs[3])
	if !ok {
		return nil, errUnknownNamespace(q.Segs[3])
	}
	var body map[string]any
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		now := s.now()
		state, err := registrationState(tx, sub, ns, now.UnixNano())
		if err != nil {
			return err
		}
		if state == regNotRegistered {
			state = regRegistering
			if s.opDuration == 0 {
				state = regRegistered
			}
			if _, err := tx.ExecContext(tx.Ctx, registrationsSchema); err != nil {
				return fmt.Errorf("creating the provider registrations table: %w", err)
			}
			if _, err := tx.ExecContext(tx.Ctx, `INSERT INTO provider_registrations(sub_key, namespace, state, settles_at) VALUES (?,?,?,?)
				ON CONFLICT(sub_key, namespace) DO UPDATE SET state = excluded.state, settles_at = excluded.settles_at`,
				api.Key(sub), api.Key(ns), state, now.Add(s.opDuration).UnixNano()); err != nil {
				return fmt.Errorf("registering %s: %w", ns, err)
			}
		}
		body = namespaceBody(sub, ns, state)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: body}, nil
}
