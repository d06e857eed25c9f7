// Package cloud holds what the cloud back-ends share with their callers:
// the errors that steer the controller (not found, precondition failed,
// throttled, a failed long-running operation, a refusal by RBAC, a lock or a
// policy: DeniedError) and the subnet view. The ARM
// implementation is in cloud/azure; callers declare the interfaces they use.
package cloud

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; the back-end wraps them with the resource and the ARM code.
var (
	// ErrNotFound: the resource (or its resource group) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrPreconditionFailed: an If-Match etag no longer matches; someone
	// else wrote the resource. Re-read and re-plan.
	ErrPreconditionFailed = errors.New("precondition failed (etag mismatch)")
	// ErrConflict: another operation on the resource is still running.
	ErrConflict = errors.New("another operation is in progress")
	// ErrThrottled: ARM answered 429 and the retry budget is spent.
	ErrThrottled = errors.New("throttled")
)

// ThrottledError is returned when ARM throttles and the client gave up; it
// says when to try again.
type ThrottledError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("throttled by ARM, retry after %s: %v", e.RetryAfter, e.Err)
}

func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }
func (e *ThrottledError) Unwrap() error        { return e.Err }

// OperationFailedError is a long-running operation that ended Failed or
// Canceled: never a success.
type OperationFailedError struct {
	Resource string
	Status   string
	Code     string
	Message  string
}

func (e *OperationFailedError) Error() string {
	return fmt.Sprintf("operation on %s ended %s: %s: %s", e.Resource, e.Status, e.Code, e.Message)
}

// Subnet is routekeeper's view of a subnet: where it is and which route
// table it is associated with.
type Subnet struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	AddressPrefixes []string `json:"addressPrefixes"`
	// RouteTableID is the associated route table, "" when none.
	RouteTableID string `json:"routeTableId,omitempty"`
	// NetworkSecurityGroupID and NATGatewayID are the other resources the
	// subnet references, "" when none: a write of the subnet needs their
	// join/action too (ARM's linked authorization).
	NetworkSecurityGroupID string `json:"networkSecurityGroupId,omitempty"`
	NATGatewayID           string `json:"natGatewayId,omitempty"`
	Etag                   string `json:"etag,omitempty"`
	ProvisioningState      string `json:"provisioningState,omitempty"`
}
