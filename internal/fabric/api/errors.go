package api

import (
	"fmt"
	"net/http"
	"strings"
)

// Error is an ARM error response: the status code and the body
// {"error":{"code","message","target","details":[...]}}.
type Error struct {
	Status  int
	Code    string
	Message string
	Target  string
	Details []ErrorDetail
	// AdditionalInfo is error.additionalInfo (a deny policy's
	// PolicyViolation, policy_check.go).
	AdditionalInfo []any
	// Header carries extra response headers (Retry-After on a 429).
	Header http.Header
}

type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func (e *Error) Body() map[string]any {
	inner := map[string]any{"code": e.Code, "message": e.Message}
	if e.Target != "" {
		inner["target"] = e.Target
	}
	if len(e.Details) > 0 {
		inner["details"] = e.Details
	}
	if len(e.AdditionalInfo) > 0 {
		inner["additionalInfo"] = e.AdditionalInfo
	}
	return map[string]any{"error": inner}
}

func NewError(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func BadRequest(code, format string, args ...any) *Error {
	return NewError(http.StatusBadRequest, code, format, args...)
}

// The errors below carry Azure's codes and, where they are known, Azure's
// messages. docs/fabric.md lists which codes are verified against Azure.

func ResourceNotFound(typ, name, rg string) *Error {
	return NewError(http.StatusNotFound, "ResourceNotFound",
		"The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
		typ, name, rg)
}

func ChildNotFound(parentType, parentName, childType, childName, rg string) *Error {
	return NewError(http.StatusNotFound, "NotFound",
		"Resource /%s/%s/%s/%s under resource group '%s' not found.", parentType, parentName, childType, childName, rg)
}

func ResourceGroupNotFound(rg string) *Error {
	return NewError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", rg)
}

func ResourceGroupBeingDeleted(rg string) *Error {
	return NewError(http.StatusConflict, "ResourceGroupBeingDeleted",
		"The resource group '%s' is in deprovisioning state and cannot perform this operation.", rg)
}

func errPreconditionFailed(sent, current, id string) *Error {
	e := NewError(http.StatusPreconditionFailed, "PreconditionFailed", "Precondition failed.")
	msg := fmt.Sprintf("Etag provided in if-match header %s does not match etag %s of resource %s in NRP data store.", sent, current, id)
	if current == "" {
		msg = fmt.Sprintf("Etag provided in if-match header %s does not match: resource %s does not exist.", sent, id)
	}
	e.Details = []ErrorDetail{{Code: "PreconditionFailedEtagMismatch", Message: msg}}
	return e
}

func errIfNoneMatch(id string) *Error {
	e := NewError(http.StatusPreconditionFailed, "PreconditionFailed", "Precondition failed.")
	e.Details = []ErrorDetail{{Code: "PreconditionFailedEtagMismatch",
		Message: fmt.Sprintf("If-None-Match: the resource %s already exists.", id)}}
	return e
}

func AnotherOperation(asyncURL string) *Error {
	return NewError(http.StatusConflict, "AnotherOperationInProgress",
		"Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: %s.", asyncURL)
}

func InvalidName(name string) *Error {
	return BadRequest("InvalidResourceName",
		"Resource name %s is invalid. The name can be up to 80 characters long. It must begin with a word character, and it must end with a word character or with '_'. The name may contain word characters or '.', '-', '_'.",
		name)
}

func InvalidContent(err error) *Error {
	msg := "The request content was invalid and cannot be deserialized"
	if err != nil {
		msg += ": " + strings.TrimSpace(err.Error())
	}
	return BadRequest("InvalidRequestContent", "%s.", strings.TrimSuffix(msg, "."))
}

func InvalidFormat(format string, args ...any) *Error {
	return BadRequest("InvalidRequestFormat", "Cannot parse the request. "+format, args...)
}

func InvalidReference(ref, by string) *Error {
	return BadRequest("InvalidResourceReference",
		"Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.",
		ref, by)
}

func Throttled(kind, sub string, retryAfter int) *Error {
	e := NewError(http.StatusTooManyRequests, "SubscriptionRequestsThrottled",
		"Number of '%s' requests for subscription '%s' actor 'routekeeper-fabric' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling",
		kind, sub, retryAfter)
	e.Header = http.Header{"Retry-After": {fmt.Sprint(retryAfter)}}
	return e
}

func Unauthenticated(msg string) *Error {
	return NewError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. %s", msg)
}

func Internal(err error) *Error {
	return NewError(http.StatusInternalServerError, "InternalServerError",
		"Encountered internal server error: %v", err)
}
