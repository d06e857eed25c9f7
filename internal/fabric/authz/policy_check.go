package authz

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/routekeeper/routekeeper/internal/azpolicy"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// policyHit is a deny policy a write violates.
type policyHit struct {
	a         *policyAssignment
	d         *PolicyDefinition
	evaluated []azpolicy.Expression
}

// checkPolicies evaluates the deny policies assigned at or above the
// resource a PUT or PATCH writes, on the resource as it would be. An
// assignment that cannot be evaluated (its definition changed since and
// wants a parameter it does not give) refuses nothing and is logged.
func (s *Provider) checkPolicies(ctx context.Context, st *authzState, q *api.Request, op *armOp) error {
	var applicable []*policyAssignment
	for _, a := range st.policies {
		if a.compiled.Applies(op.scope) {
			applicable = append(applicable, a)
		}
	}
	if len(applicable) == 0 {
		return nil
	}
	doc, err := s.policyDoc(ctx, q, op)
	if err != nil || doc == nil {
		return err
	}
	var hits []policyHit
	for _, a := range applicable {
		d := st.policyDefs[strings.ToLower(a.Properties.PolicyDefinitionID)]
		if d == nil {
			continue
		}
		r, err := azpolicy.Evaluate(d.compiled, a.compiled, doc)
		if err != nil {
			s.log.Warn("fabric: policy assignment not evaluated", "assignment", a.ID, "resource", op.scope, "err", err)
			continue
		}
		if r.Denied() {
			hits = append(hits, policyHit{a: a, d: d, evaluated: r.Expressions})
		}
	}
	if len(hits) == 0 {
		return nil
	}
	return errDisallowedByPolicy(op.name, hits)
}

// policyDoc is the resource a write would leave, as policies see it: a
// PUT's body with the ID, name and type of its path; for a PATCH (tags),
// the stored resource with the new tags. nil when there is nothing to
// evaluate (a body that is not JSON is the handler's to refuse).
func (s *Provider) policyDoc(ctx context.Context, q *api.Request, op *armOp) (map[string]any, error) {
	var body map[string]any
	if json.Unmarshal(q.Body, &body) != nil || body == nil {
		return nil, nil
	}
	if q.Method == http.MethodPatch {
		stored, err := s.storedDoc(ctx, q, op)
		if err != nil || stored == nil {
			return nil, err
		}
		if tags := azpolicy.Field(body, "tags"); tags != nil {
			stored["tags"] = tags
		}
		body = stored
	}
	body["id"], body["name"], body["type"] = op.scope, op.name, op.resourceType
	return body, nil
}

// storedDoc reads the resource a PATCH changes.
func (s *Provider) storedDoc(ctx context.Context, q *api.Request, op *armOp) (map[string]any, error) {
	var doc []byte
	err := s.view(ctx, func(tx *store.Txn) error {
		if strings.EqualFold(op.resourceType, api.ArmTypeResourceGroup) || strings.EqualFold(op.resourceType, "Microsoft.Resources/subscriptions/resourceGroups") {
			rg, err := tx.GetRG(q.Segs[1], q.Segs[3])
			if err != nil || rg == nil {
				return err
			}
			var err2 error
			doc, err2 = json.Marshal(s.groups.Body(rg))
			return err2
		}
		row, err := tx.GetResourceForRead(api.Key(op.scope))
		if err != nil || row == nil {
			return err
		}
		doc = row.Doc
		return nil
	})
	if err != nil || doc == nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("decoding %s for policy evaluation: %w", op.scope, err)
	}
	return m, nil
}

// policyIdentifier is one entry of the "Policy identifiers" ARM names in
// the message, in its key order.
type policyIdentifier struct {
	PolicyAssignment policyRef `json:"policyAssignment"`
	PolicyDefinition policyRef `json:"policyDefinition"`
}

type policyRef struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// errDisallowedByPolicy is ARM's refusal of a write that violates deny
// policies: the resource and the policies in the message, each policy's
// details in additionalInfo (type PolicyViolation).
func errDisallowedByPolicy(name string, hits []policyHit) *api.Error {
	var ids []policyIdentifier
	var info []any
	for _, h := range hits {
		aName := cmp.Or(h.a.Properties.DisplayName, h.a.Name)
		dName := cmp.Or(h.d.Properties.DisplayName, h.d.Name)
		ids = append(ids, policyIdentifier{PolicyAssignment: policyRef{aName, h.a.ID}, PolicyDefinition: policyRef{dName, h.d.ID}})
		params := map[string]any{}
		for k, v := range h.a.Properties.Parameters {
			params[k] = map[string]any{"value": v.Value}
		}
		info = append(info, map[string]any{"type": "PolicyViolation", "info": map[string]any{
			"evaluationDetails":           map[string]any{"evaluatedExpressions": evaluatedExpressions(h.evaluated)},
			"policyDefinitionId":          h.d.ID,
			"policyDefinitionName":        h.d.Name,
			"policyDefinitionDisplayName": h.d.Properties.DisplayName,
			"policyDefinitionEffect":      "Deny",
			"policyAssignmentId":          h.a.ID,
			"policyAssignmentName":        h.a.Name,
			"policyAssignmentDisplayName": h.a.Properties.DisplayName,
			"policyAssignmentScope":       h.a.Properties.Scope,
			"policyAssignmentParameters":  params,
		}})
	}
	b, _ := json.Marshal(ids)
	e := api.NewError(http.StatusForbidden, "RequestDisallowedByPolicy", "Resource '%s' was disallowed by policy. Policy identifiers: '%s'.", name, b)
	e.Target = name
	e.AdditionalInfo = info
	return e
}

// evaluatedExpressions are azpolicy's expressions in ARM's shape.
func evaluatedExpressions(exprs []azpolicy.Expression) []map[string]any {
	out := []map[string]any{}
	for _, x := range exprs {
		result := "False"
		if x.Result {
			result = "True"
		}
		out = append(out, map[string]any{"result": result, "expressionKind": "Field", "expression": x.Field, "path": x.Path,
			"expressionValue": x.Value, "targetValue": x.Target, "operator": x.Operator})
	}
	return out
}
