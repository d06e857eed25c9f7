package fabric

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is an ARM error response: the status code and the body
// {"error":{"code","message","target","details":[...]}}.
type apiError struct {
	Status  int
	Code    string
	Message string
	Target  string
	Details []apiErrorDetail
	// AdditionalInfo is error.additionalInfo (a deny policy's
	// PolicyViolation, policy_check.go).
	AdditionalInfo []any
	// header carries extra response headers (Retry-After on a 429).
	header http.Header
}

type apiErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func (e *apiError) body() map[string]any {
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

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(code, format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, code, format, args...)
}

// The errors below carry Azure's codes and, where they are known, Azure's
// messages. docs/fabric.md lists which codes are verified against Azure.

func errResourceNotFound(typ, name, rg string) *apiError {
	return newError(http.StatusNotFound, "ResourceNotFound",
		"The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
		typ, name, rg)
}

func errChildNotFound(parentType, parentName, childType, childName, rg string) *apiError {
	return newError(http.StatusNotFound, "NotFound",
		"Resource /%s/%s/%s/%s under resource group '%s' not found.", parentType, parentName, childType, childName, rg)
}

func errResourceGroupNotFound(rg string) *apiError {
	return newError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", rg)
}

func errResourceGroupBeingDeleted(rg string) *apiError {
	return newError(http.StatusConflict, "ResourceGroupBeingDeleted",
		"The resource group '%s' is in deprovisioning state and cannot perform this operation.", rg)
}

func errPreconditionFailed(sent, current, id string) *apiError {
	e := newError(http.StatusPreconditionFailed, "PreconditionFailed", "Precondition failed.")
	msg := fmt.Sprintf("Etag provided in if-match header %s does not match etag %s of resource %s in NRP data store.", sent, current, id)
	if current == "" {
		msg = fmt.Sprintf("Etag provided in if-match header %s does not match: resource %s does not exist.", sent, id)
	}
	e.Details = []apiErrorDetail{{Code: "PreconditionFailedEtagMismatch", Message: msg}}
	return e
}

func errIfNoneMatch(id string) *apiError {
	e := newError(http.StatusPreconditionFailed, "PreconditionFailed", "Precondition failed.")
	e.Details = []apiErrorDetail{{Code: "PreconditionFailedEtagMismatch",
		Message: fmt.Sprintf("If-None-Match: the resource %s already exists.", id)}}
	return e
}

func errAnotherOperation(asyncURL string) *apiError {
	return newError(http.StatusConflict, "AnotherOperationInProgress",
		"Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: %s.", asyncURL)
}

func errInvalidName(name string) *apiError {
	return badRequest("InvalidResourceName",
		"Resource name %s is invalid. The name can be up to 80 characters long. It must begin with a word character, and it must end with a word character or with '_'. The name may contain word characters or '.', '-', '_'.",
		name)
}

func errInvalidContent(err error) *apiError {
	msg := "The request content was invalid and cannot be deserialized"
	if err != nil {
		msg += ": " + strings.TrimSpace(err.Error())
	}
	return badRequest("InvalidRequestContent", "%s.", strings.TrimSuffix(msg, "."))
}

func errInvalidFormat(format string, args ...any) *apiError {
	return badRequest("InvalidRequestFormat", "Cannot parse the request. "+format, args...)
}

func errInvalidReference(ref, by string) *apiError {
	return badRequest("InvalidResourceReference",
		"Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.",
		ref, by)
}

func errThrottled(kind, sub string, retryAfter int) *apiError {
	e := newError(http.StatusTooManyRequests, "SubscriptionRequestsThrottled",
		"Number of '%s' requests for subscription '%s' actor 'routekeeper-fabric' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling",
		kind, sub, retryAfter)
	e.header = http.Header{"Retry-After": {fmt.Sprint(retryAfter)}}
	return e
}

func errUnauthenticated(msg string) *apiError {
	return newError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. %s", msg)
}

func errInternal(err error) *apiError {
	return newError(http.StatusInternalServerError, "InternalServerError",
		"Encountered internal server error: %v", err)
}
