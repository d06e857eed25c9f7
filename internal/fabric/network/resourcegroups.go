package network

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// ResourceGroup is a resource group as ARM (Microsoft.Resources) shows it.
type ResourceGroup struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Location   string            `json:"location"`
	Tags       map[string]string `json:"tags,omitempty"`
	Properties struct {
		ProvisioningState string `json:"provisioningState"`
	} `json:"properties"`
}

func RGBody(r *store.RGRow) *ResourceGroup {
	g := &ResourceGroup{ID: api.RGID(r.Sub, r.Name), Name: r.Name, Type: api.ArmTypeResourceGroup, Location: r.Location}
	_ = json.Unmarshal([]byte(r.Tags), &g.Tags)
	g.Properties.ProvisioningState = r.State
	return g
}

func (s *Provider) GetResourceGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	var resp *api.Response
	err := s.View(ctx, func(tx *store.Txn) error {
		rg, err := RequireRG(tx, q.Segs[1], q.Segs[3], false)
		if err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusOK, Body: RGBody(rg)}
		return nil
	})
	return resp, err
}

// HeadResourceGroup is ARM's CheckExistence: 204 or 404, no body.
func (s *Provider) HeadResourceGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	if _, err := s.GetResourceGroup(ctx, q); err != nil {
		return &api.Response{Status: http.StatusNotFound}, nil
	}
	return &api.Response{Status: http.StatusNoContent}, nil
}

func (s *Provider) PutResourceGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	var in struct {
		Location string             `json:"location"`
		Tags     map[string]*string `json:"tags"`
	}
	if err := api.DecodeObject(q.Body, &in); err != nil {
		return nil, err
	}
	if err := api.CheckTags(in.Tags); err != nil {
		return nil, err
	}
	sub, name := q.Segs[1], q.Segs[3]
	if !api.ValidRGName(name) {
		return nil, api.BadRequest("InvalidResourceGroupName",
			"Resource group name '%s' is invalid: it must be 1-90 characters of letters, digits, '_', '-', '.', '(' or ')', and must not end with '.'.", name)
	}
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.settleTx(tx); err != nil {
			return err
		}
		cur, err := tx.GetRG(sub, name)
		if err != nil {
			return err
		}
		if cur != nil && cur.State == "Deleting" {
			return api.ResourceGroupBeingDeleted(cur.Name)
		}
		existing := ""
		if cur != nil {
			existing = cur.Location
		}
		loc, err := api.LocationOf(&in.Location, existing, name, name)
		if err != nil {
			if cur != nil {
				return api.NewError(http.StatusConflict, "InvalidResourceGroupLocation",
					"Invalid resource group location '%s'. The Resource group already exists in location '%s'.", api.NormalizeLocation(in.Location), cur.Location)
			}
			return err
		}
		tags := map[string]string{}
		for k, v := range in.Tags {
			tags[k] = api.Str(v)
		}
		tb, err := json.Marshal(tags)
		if err != nil {
			return err
		}
		row := &store.RGRow{Key: api.Key(api.RGID(sub, name)), Sub: sub, Name: name, Location: loc, Tags: string(tb), State: statusSucceeded}
		status := http.StatusCreated
		if cur != nil {
			row.Sub, row.Name, row.Location = cur.Sub, cur.Name, cur.Location
			status = http.StatusOK
		}
		if err := tx.PutRG(row); err != nil {
			return err
		}
		resp = &api.Response{Status: status, Body: RGBody(row)}
		return nil
	})
	return resp, err
}

// PatchResourceGroup updates the tags of a resource group.
func (s *Provider) PatchResourceGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	tags, err := api.DecodeTags(q.Body)
	if err != nil {
		return nil, err
	}
	var resp *api.Response
	err = s.store.Write(ctx, func(tx *store.Txn) error {
		rg, err := RequireRG(tx, q.Segs[1], q.Segs[3], true)
		if err != nil {
			return err
		}
		if tags != nil {
			tb, err := json.Marshal(PlainTags(tags))
			if err != nil {
				return err
			}
			rg.Tags = string(tb)
			if err := tx.PutRG(rg); err != nil {
				return err
			}
		}
		resp = &api.Response{Status: http.StatusOK, Body: RGBody(rg)}
		return nil
	})
	return resp, err
}

// DeleteResourceGroup deletes a group and everything in it, as a
// long-running operation polled through Location (Microsoft.Resources
// style: 202, then 200 from the operation result).
func (s *Provider) DeleteResourceGroup(ctx context.Context, q *api.Request) (*api.Response, error) {
	var resp *api.Response
	err := s.store.Write(ctx, func(tx *store.Txn) error {
		if err := s.settleTx(tx); err != nil {
			return err
		}
		rg, err := tx.GetRG(q.Segs[1], q.Segs[3])
		if err != nil {
			return err
		}
		if rg == nil {
			return api.ResourceGroupNotFound(q.Segs[3])
		}
		if rg.State == "Deleting" {
			return api.ResourceGroupBeingDeleted(rg.Name)
		}
		rg.State = "Deleting"
		if err := tx.PutRG(rg); err != nil {
			return err
		}
		o := s.newOp(opRGDelete, rg.Sub, rg.Location, rg.Key, api.RGID(rg.Sub, rg.Name), "", nil)
		if err := s.record(tx, o); err != nil {
			return err
		}
		h := http.Header{}
		h.Set("Location", locationURL(q, o))
		resp = &api.Response{Status: http.StatusAccepted, Header: h}
		return nil
	})
	return resp, err
}

func (s *Provider) ListResourceGroups(ctx context.Context, q *api.Request) (*api.Response, error) {
	page := struct {
		Value []*ResourceGroup `json:"value"`
	}{Value: []*ResourceGroup{}}
	err := s.View(ctx, func(tx *store.Txn) error {
		rows, err := tx.ListRGs(q.Segs[1])
		if err != nil {
			return err
		}
		for _, r := range rows {
			page.Value = append(page.Value, RGBody(r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: page}, nil
}

type Subscription struct {
	ID                   string         `json:"id"`
	SubscriptionID       string         `json:"subscriptionId"`
	TenantID             string         `json:"tenantId"`
	HomeTenantID         string         `json:"homeTenantId"`
	DisplayName          string         `json:"displayName"`
	State                string         `json:"state"`
	AuthorizationSource  string         `json:"authorizationSource"`
	ManagedByTenants     []any          `json:"managedByTenants"`
	SubscriptionPolicies map[string]any `json:"subscriptionPolicies"`
}

func subBody(sub string) Subscription {
	return Subscription{
		ID: "/subscriptions/" + sub, SubscriptionID: sub, TenantID: api.DefaultTenant, HomeTenantID: api.DefaultTenant,
		DisplayName: "routekeeper fabric", State: "Enabled", AuthorizationSource: "RoleBased", ManagedByTenants: []any{},
		SubscriptionPolicies: map[string]any{"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01", "spendingLimit": "Off"},
	}
}

// ListSubscriptions lists the default subscription and every other one
// that holds resource groups: az login needs at least one.
func (s *Provider) ListSubscriptions(ctx context.Context, q *api.Request) (*api.Response, error) {
	page := struct {
		Value []Subscription `json:"value"`
	}{Value: []Subscription{subBody(api.DefaultSubscription)}}
	err := s.View(ctx, func(tx *store.Txn) error {
		subs, err := tx.ListSubscriptions()
		for _, sub := range subs {
			if !strings.EqualFold(sub, api.DefaultSubscription) {
				page.Value = append(page.Value, subBody(sub))
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: page}, nil
}

// GetSubscription answers for any subscription: the fabric accepts every
// subscription ID.
func (s *Provider) GetSubscription(_ context.Context, q *api.Request) (*api.Response, error) {
	return &api.Response{Status: http.StatusOK, Body: subBody(q.Segs[1])}, nil
}

// Groups are the resource groups as this provider keeps them, for the
// authorization checks (authz.Groups).
type Groups struct{}

// Require is RequireRG.
func (Groups) Require(tx *store.Txn, sub, rg string, write bool) (*store.RGRow, error) {
	return RequireRG(tx, sub, rg, write)
}

// Body is RGBody.
func (Groups) Body(rg *store.RGRow) any { return RGBody(rg) }
