package fabric

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

// Security rules and default security rules as child resources of an NSG:
// a rule PUT or DELETE changes the NSG (new etag, an operation on it), as a
// route does its route table.

// nsgRules reads an NSG for a GET of its rules (or default rules).
func (s *Server) nsgRules(ctx context.Context, q *request, defaults bool) ([]*armnetwork.SecurityRule, error) {
	var rules []*armnetwork.SecurityRule
	err := s.readTop(ctx, q, typeNetworkSecurityGroups, armTypeNSG, func(_ *txn, row *resourceRow) error {
		g, err := decodeNSG(row.Doc)
		if err != nil {
			return err
		}
		rules = g.Properties.SecurityRules
		if defaults {
			rules = g.Properties.DefaultSecurityRules
		}
		return nil
	})
	return rules, err
}

func (s *Server) listRules(ctx context.Context, q *request, defaults bool) (*response, error) {
	rules, err := s.nsgRules(ctx, q, defaults)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, 0, len(rules))
	for _, r := range rules {
		b, err := encode(r)
		if err != nil {
			return nil, err
		}
		items = append(items, b)
	}
	return &response{status: http.StatusOK, body: s.pageChildren(q, items)}, nil
}

func (s *Server) getRule(ctx context.Context, q *request, defaults bool) (*response, error) {
	rules, err := s.nsgRules(ctx, q, defaults)
	if err != nil {
		return nil, err
	}
	tg := q.target()
	r := findRule(rules, tg.childName)
	if r == nil {
		child := childSecurityRules
		if defaults {
			child = childDefaultSecurityRules
		}
		return nil, errChildNotFound(typeNetworkSecurityGroups, tg.name, child, tg.childName, tg.rg)
	}
	return &response{status: http.StatusOK, body: r, header: withEtag(str(r.Etag))}, nil
}

func (s *Server) listSecurityRules(ctx context.Context, q *request) (*response, error) {
	return s.listRules(ctx, q, false)
}

func (s *Server) getSecurityRule(ctx context.Context, q *request) (*response, error) {
	return s.getRule(ctx, q, false)
}

func (s *Server) listDefaultSecurityRules(ctx context.Context, q *request) (*response, error) {
	return s.listRules(ctx, q, true)
}

func (s *Server) getDefaultSecurityRule(ctx context.Context, q *request) (*response, error) {
	return s.getRule(ctx, q, true)
}

func (s *Server) putSecurityRule(ctx context.Context, q *request) (*response, error) {
	var in armnetwork.SecurityRule
	if err := decodeModel(q.body, &in); err != nil {
		return nil, err
	}
	tg := q.target()
	if !validName(tg.childName) {
		return nil, errInvalidName(tg.childName)
	}
	var resp *response
	err := s.writeTop(ctx, q, typeNetworkSecurityGroups, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			return errResourceNotFound(armTypeNSG, tg.name, tg.rg)
		}
		g, err := decodeNSG(row.Doc)
		if err != nil {
			return err
		}
		prev := findRule(g.Properties.SecurityRules, tg.childName)
		ruleID, prevTag := childID(row.ID, childSecurityRules, tg.childName), ""
		if prev != nil {
			ruleID, prevTag = str(prev.ID), str(prev.Etag)
		}
		if err := checkPreconditions(q, ruleID, prev != nil, prevTag); err != nil {
			return err
		}
		etag := newEtag()
		nr, err := buildSecurityRule(row.ID, tg.childName, in.Properties, prev, etag)
		if err != nil {
			return err
		}
		if prev != nil && succeeded(g.Properties.ProvisioningState) && sameRule(prev, nr) {
			resp = unchanged(prev, str(prev.Etag))
			return nil
		}
		nr.Etag = ptr(etag)
		rules := make([]*armnetwork.SecurityRule, 0, len(g.Properties.SecurityRules)+1)
		replaced := false
		for _, r := range g.Properties.SecurityRules {
			if strings.EqualFold(str(r.Name), tg.childName) {
				rules = append(rules, nr)
				replaced = true
				continue
			}
			rules = append(rules, r)
		}
		if !replaced {
			rules = append(rules, nr)
		}
		if err := checkRulePriorities(rules); err != nil {
			return err
		}
		prevDoc := row.Doc
		g.Properties.SecurityRules = rules
		g.Etag = ptr(etag)
		g.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateUpdating)
		doc, err := encode(g)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		resp, err = s.acceptPut(tx, q, s.newOp(opPut, rg.Sub, str(g.Location), row.Key, row.ID, "", prevDoc), prev == nil, etag, nr)
		return err
	})
	return resp, err
}

func (s *Server) deleteSecurityRule(ctx context.Context, q *request) (*response, error) {
	tg := q.target()
	var resp *response
	err := s.writeTop(ctx, q, typeNetworkSecurityGroups, func(tx *txn, rg *rgRow, row, _ *resourceRow) error {
		if row == nil {
			return errResourceNotFound(armTypeNSG, tg.name, tg.rg)
		}
		g, err := decodeNSG(row.Doc)
		if err != nil {
			return err
		}
		r := findRule(g.Properties.SecurityRules, tg.childName)
		tag := ""
		if r != nil {
			tag = str(r.Etag)
		}
		if err := checkPreconditions(q, childID(row.ID, childSecurityRules, tg.childName), r != nil, tag); err != nil {
			return err
		}
		if r == nil {
			resp = &response{status: http.StatusNoContent}
			return nil
		}
		prevDoc := row.Doc
		etag := newEtag()
		r.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateDeleting)
		g.Properties.ProvisioningState = ptr(armnetwork.ProvisioningStateUpdating)
		g.Etag = ptr(etag)
		doc, err := encode(g)
		if err != nil {
			return err
		}
		row.Doc, row.Etag = doc, etag
		if err := s.storeRow(tx, row); err != nil {
			return err
		}
		o := s.newOp(opChildDelete, rg.Sub, str(g.Location), row.Key, row.ID, str(r.Name), prevDoc)
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &response{status: http.StatusAccepted, header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
}
