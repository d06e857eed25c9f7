package armerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// ErrDenied: Azure refused the request for who asked or what governs the
// scope, not for what was asked: a missing role (AuthorizationFailed,
// LinkedAuthorizationFailed), a management lock (ScopeLocked) or a deny
// policy (RequestDisallowedByPolicy). Retrying does not help; someone must
// grant, unlock or exempt. The error is a *DeniedError.
var ErrDenied = errors.New("denied by Azure")

// The ARM error codes of the refusals DeniedError carries.
const (
	CodeAuthorizationFailed       = "AuthorizationFailed"
	CodeLinkedAuthorizationFailed = "LinkedAuthorizationFailed"
	CodeScopeLocked               = "ScopeLocked"
	CodeRequestDisallowedByPolicy = "RequestDisallowedByPolicy"
)

// DeniedError is ARM's refusal of a request, with what its message names:
// for AuthorizationFailed the principal, the action and the scope; for
// LinkedAuthorizationFailed also the linked action(s) and scope(s) (comma
// separated when several; LinkedActions and LinkedScopes split them); for
// ScopeLocked the operation (write or delete), the scope and the locked
// scope(s); for RequestDisallowedByPolicy the resource and the policy
// assignment and definition. Fields ARM did not name are "".
type DeniedError struct {
	// Status is the HTTP status (403, or 409 for ScopeLocked); 0 when the
	// refusal came as the error of a long-running operation.
	Status int
	// Code is one of the Code* constants.
	Code string
	// Principal is the object id of the caller (else its client id);
	// Client is the client as ARM named it.
	Principal, Client string
	// Action is the action refused (or allowed, for a linked refusal), on
	// Scope; Operation is "write" or "delete" for ScopeLocked.
	Action, Scope, Operation string
	// LinkedAction and LinkedScope: what a LinkedAuthorizationFailed lacks.
	LinkedAction, LinkedScope string
	// Lock is the locked scope(s) a ScopeLocked names.
	Lock string
	// Target is the resource name a RequestDisallowedByPolicy names;
	// PolicyAssignment and PolicyDefinition are the IDs of the policy.
	Target, PolicyAssignment, PolicyDefinition string
	// Message is ARM's message as sent.
	Message string
	// Err is the error this one was made from (the client's error with the
	// operation it was doing), if any.
	Err error
}

func (e *DeniedError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Unwrap returns the error the refusal was made from.
func (e *DeniedError) Unwrap() error { return e.Err }

// LinkedActions returns LinkedAction split at commas.
func (e *DeniedError) LinkedActions() []string { return splitList(e.LinkedAction) }

// LinkedScopes returns LinkedScope split at commas.
func (e *DeniedError) LinkedScopes() []string { return splitList(e.LinkedScope) }

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// IsDeniedCode reports whether an ARM error code is one of the refusals
// DeniedError carries.
func IsDeniedCode(code string) bool {
	switch strings.ToLower(code) {
	case "authorizationfailed", "linkedauthorizationfailed", "scopelocked", "requestdisallowedbypolicy":
		return true
	}
	return false
}

// ARM's messages, as published in real answers (see docs/fabric.md,
// "Identity and authorization", for the sources).
var (
	authzFailedRE = regexp.MustCompile(`(?:[Cc]lient '([^']*)' with |[Cc]lient with )?object id '([^']*)' does not have authorization to perform action '([^']*)' over scope '([^']*)'`)
	linkedRE      = regexp.MustCompile(`(?:[Cc]lient '([^']*)' with object id '([^']*)' )?has permission to perform action '([^']*)' on scope '([^']*)'; however, it does not have permission to perform actions?(?:\(s\))? '([^']*)' on the linked scope\(s\) '([^']*)'`)
	lockedRE      = regexp.MustCompile(`[Ss]cope '([^']*)' cannot perform (\w+) operation because following scope\(s\) are locked(?:: '([^']*)')?`)
	policyRE      = regexp.MustCompile(`^Resource '([^']*)' was disallowed by policy\.`)
	policyIDsRE   = regexp.MustCompile(`Policy identifiers: '(\[.*\])'`)
)

// NewDeniedError makes the DeniedError of an ARM error answer (status,
// error code and message), reading what the message names; nil when the
// code is not a refusal. Parts of a message it cannot read stay "".
func NewDeniedError(status int, code, message string) *DeniedError {
	if !IsDeniedCode(code) {
		return nil
	}
	e := &DeniedError{Status: status, Code: canonicalCode(code), Message: message}
	switch e.Code {
	case CodeAuthorizationFailed:
		if m := authzFailedRE.FindStringSubmatch(message); m != nil {
			e.Client, e.Principal, e.Action, e.Scope = m[1], m[2], m[3], m[4]
		}
	case CodeLinkedAuthorizationFailed:
		if m := linkedRE.FindStringSubmatch(message); m != nil {
			e.Client, e.Principal, e.Action, e.Scope, e.LinkedAction, e.LinkedScope = m[1], m[2], m[3], m[4], m[5], m[6]
		}
	case CodeScopeLocked:
		if m := lockedRE.FindStringSubmatch(message); m != nil {
			e.Scope, e.Operation, e.Lock = m[1], strings.ToLower(m[2]), m[3]
		}
	case CodeRequestDisallowedByPolicy:
		if m := policyRE.FindStringSubmatch(message); m != nil {
			e.Target = m[1]
		}
		if m := policyIDsRE.FindStringSubmatch(message); m != nil {
			var ids []struct {
				PolicyAssignment struct{ ID string } `json:"policyAssignment"`
				PolicyDefinition struct{ ID string } `json:"policyDefinition"`
			}
			if json.Unmarshal([]byte(m[1]), &ids) == nil && len(ids) > 0 {
				e.PolicyAssignment, e.PolicyDefinition = ids[0].PolicyAssignment.ID, ids[0].PolicyDefinition.ID
			}
		}
	}
	if e.Principal == "" {
		e.Principal = e.Client
	}
	return e
}

// DeniedStatus is the HTTP status ARM answers a refusal code with.
func DeniedStatus(code string) int {
	if strings.EqualFold(code, CodeScopeLocked) {
		return http.StatusConflict
	}
	return http.StatusForbidden
}

func canonicalCode(code string) string {
	for _, c := range []string{CodeAuthorizationFailed, CodeLinkedAuthorizationFailed, CodeScopeLocked, CodeRequestDisallowedByPolicy} {
		if strings.EqualFold(c, code) {
			return c
		}
	}
	return code
}
