package observe

import (
	"errors"

	"github.com/routekeeper/routekeeper/internal/armerr"
)

// Refusal is what ARM's refusal of a request named: internal/cloud's
// DeniedError, handed to the judge, which imports no cloud package.
type Refusal struct {
	Code                        string
	Principal                   string
	Action, Scope, Operation    string
	LinkedActions, LinkedScopes []string
	Lock                        string
	PolicyAssignment            string
	PolicyDefinition            string
	Message                     string
}

// The refusal codes.
const (
	CodeAuthorizationFailed       = "AuthorizationFailed"
	CodeLinkedAuthorizationFailed = "LinkedAuthorizationFailed"
	CodeScopeLocked               = "ScopeLocked"
	CodeRequestDisallowedByPolicy = "RequestDisallowedByPolicy"
)

// RefusalOf returns what a refusal of ARM (armerr.ErrDenied) named, nil
// for any other error.
func RefusalOf(err error) *Refusal {
	var de *armerr.DeniedError
	if !errors.As(err, &de) {
		return nil
	}
	return &Refusal{
		Code: de.Code, Principal: de.Principal, Action: de.Action, Scope: de.Scope, Operation: de.Operation,
		LinkedActions: de.LinkedActions(), LinkedScopes: de.LinkedScopes(), Lock: de.Lock,
		PolicyAssignment: de.PolicyAssignment, PolicyDefinition: de.PolicyDefinition, Message: de.Message,
	}
}
