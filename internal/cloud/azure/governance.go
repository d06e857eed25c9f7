package azure

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/observe"
)

// The governance of a scope: its management locks and policy assignments
// and their definitions, read with plain ARM requests on the client's
// pipeline (credential, retries, transport) as Permissions does. A Reader
// may read them all: Microsoft.Authorization/locks/read,
// policyAssignments/read and policyDefinitions/read are in */read.
// routekeeper's own role (deploy/azure/routekeeper-role.json) does not
// grant them: a refusal comes back as a *armerr.DeniedError.

// The api-versions asked for: Azure's REST reference documents both
// (Management Locks 2016-09-01, Policy 2023-04-01), and the fabric's apply
// writes with them.
const (
	locksAPIVersion  = "2016-09-01"
	policyAPIVersion = "2023-04-01"
)

// Lock, PolicyAssignment and PolicyDefinition are the cloud package's
// (nothing above the adapter imports it).
type (
	Lock             = observe.Lock
	PolicyAssignment = observe.PolicyAssignment
	PolicyDefinition = observe.PolicyDefinition
)

// Locks lists the management locks that apply at scope (a subscription,
// resource group or resource ID, a subnet or route included): those at
// the scope and above it, GET {scope}/providers/Microsoft.Authorization/
// locks?$filter=atScope().
func (c *Client) Locks(ctx context.Context, scope string) ([]Lock, error) {
	scope, err := armScope("locks", scope)
	if err != nil {
		return nil, err
	}
	var out []Lock
	err = c.listPages(ctx, "listing the locks at "+scope, scope, atScopeURL(scope, "locks", locksAPIVersion), func(raw json.RawMessage) error {
		var l struct {
			ID, Name   string
			Properties struct{ Level, Notes string }
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		out = append(out, Lock{ID: l.ID, Name: l.Name, Level: l.Properties.Level, Notes: l.Properties.Notes,
			Scope: extensionScope(l.ID, "locks")})
		return nil
	})
	return out, err
}

// PolicyAssignments lists the policy assignments that apply at scope:
// those at the scope and above it, GET {scope}/providers/
// Microsoft.Authorization/policyAssignments?$filter=atScope(). Each keeps
// its ARM JSON for azpolicy.ParseAssignment. An assignment whose
// NotScopes leave the scope out is listed too (ARM lists it).
func (c *Client) PolicyAssignments(ctx context.Context, scope string) ([]PolicyAssignment, error) {
	scope, err := armScope("policy assignments", scope)
	if err != nil {
		return nil, err
	}
	var out []PolicyAssignment
	err = c.listPages(ctx, "listing the policy assignments at "+scope, scope, atScopeURL(scope, "policyAssignments", policyAPIVersion), func(raw json.RawMessage) error {
		var a struct {
			ID, Name   string
			Properties struct {
				DisplayName, Scope, PolicyDefinitionID, EnforcementMode string
				NotScopes                                               []string
			}
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return err
		}
		p := a.Properties
		out = append(out, PolicyAssignment{ID: a.ID, Name: a.Name, DisplayName: p.DisplayName, Scope: cmp.Or(p.Scope, extensionScope(a.ID, "policyAssignments")),
			NotScopes: p.NotScopes, DefinitionID: p.PolicyDefinitionID, EnforcementMode: cmp.Or(p.EnforcementMode, "Default"), Document: raw})
		return nil
	})
	return out, err
}

// PolicyDefinition reads a policy definition by its ID, as an
// assignment's DefinitionID names it: a custom definition
// (/subscriptions/{s}/providers/Microsoft.Authorization/policyDefinitions/
// {name}, or under a management group) or a built-in
// (/providers/Microsoft.Authorization/policyDefinitions/{guid}). A policy
// set definition (initiative) ID is refused: azpolicy does not evaluate
// initiatives. A definition that does not exist is armerr.ErrNotFound.
func (c *Client) PolicyDefinition(ctx context.Context, id string) (*PolicyDefinition, error) {
	id = "/" + strings.Trim(strings.TrimSpace(id), "/")
	if !strings.Contains(strings.ToLower(id), "/providers/microsoft.authorization/policydefinitions/") {
		return nil, fmt.Errorf("policy definition %q: want .../providers/Microsoft.Authorization/policyDefinitions/{name} (policy set definitions are not supported)", id)
	}
	pl, endpoint, err := c.armPipeline()
	if err != nil {
		return nil, err
	}
	op := "reading policy definition " + id
	raw, err := getJSON(ctx, pl, op, id, endpoint+escapePath(id)+"?api-version="+policyAPIVersion)
	if err != nil {
		return nil, err
	}
	var d struct {
		ID, Name   string
		Properties struct{ DisplayName, PolicyType, Mode string }
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return &PolicyDefinition{ID: cmp.Or(d.ID, id), Name: d.Name, DisplayName: d.Properties.DisplayName,
		PolicyType: d.Properties.PolicyType, Mode: d.Properties.Mode, Document: json.RawMessage(raw)}, nil
}

// armScope checks and trims a scope of a Microsoft.Authorization list.
func armScope(what, scope string) (string, error) {
	scope = "/" + strings.Trim(strings.TrimSpace(scope), "/")
	if !strings.HasPrefix(strings.ToLower(scope), "/subscriptions/") {
		return "", fmt.Errorf("%s at %q: the scope must be a subscription, resource group or resource ID", what, scope)
	}
	return scope, nil
}

// atScopeURL is the path and query of a Microsoft.Authorization list of
// kind at scope with $filter=atScope() (the endpoint is added by
// listPages).
func atScopeURL(scope, kind, apiVersion string) string {
	q := url.Values{"$filter": {"atScope()"}, "api-version": {apiVersion}}
	return escapePath(scope) + "/providers/Microsoft.Authorization/" + kind + "?" + q.Encode()
}

func extensionScope(id, kind string) string {
	scope, _ := armid.ScopeOf(id, "Microsoft.Authorization/"+kind)
	return scope
}

// listPages GETs an ARM list (path is the first page's path and query)
// and every page after it through nextLink, handing each member of value
// to each. Errors are classified against resource.
func (c *Client) listPages(ctx context.Context, op, resource, path string, each func(json.RawMessage) error) error {
	pl, endpoint, err := c.armPipeline()
	if err != nil {
		return err
	}
	next := endpoint + path
	for pages := 0; next != ""; pages++ {
		if pages == 100 {
			return fmt.Errorf("%s: more than 100 pages", op)
		}
		req, err := runtime.NewRequest(ctx, http.MethodGet, next)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		resp, err := pl.Do(req)
		if err != nil {
			return classify(op, resource, err)
		}
		if !runtime.HasStatusCode(resp, http.StatusOK) {
			return classify(op, resource, runtime.NewResponseError(resp))
		}
		var page struct {
			Value    []json.RawMessage `json:"value"`
			NextLink string            `json:"nextLink"`
		}
		if err := runtime.UnmarshalAsJSON(resp, &page); err != nil {
			return fmt.Errorf("%s: decoding the answer: %w", op, err)
		}
		for _, v := range page.Value {
			if err := each(v); err != nil {
				return fmt.Errorf("%s: decoding a member of value: %w", op, err)
			}
		}
		next = page.NextLink
	}
	return nil
}
