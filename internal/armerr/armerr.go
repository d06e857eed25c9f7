// Package armerr is the vocabulary of what Azure Resource Manager answers
// when it does not do what was asked: the errors that steer the
// controller and the observer (not found, precondition failed, another
// operation in progress, throttled, a failed long-running operation, a
// write whose outcome is unknown, and a refusal by RBAC, a lock or a
// policy: DeniedError). The cloud back-end (internal/cloud/azure) makes
// them from ARM's answers; everything above it reads them. It holds no
// I/O and imports no cloud package, so the judge's dependencies stay free
// of the
package armerr

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
	// ErrOutcomeUnknown: a write was sent and its answer was lost (the
	// connection reset or timed out after the request went out, a front
	// answered 5xx after it may have forwarded it, or the long-running
	// operation it started could not be followed to its end). It may or
	// may not have been applied: read the resource back and plan from what
	// is there; never send the same conditional write again blind.
	ErrOutcomeUnknown = errors.New("outcome unknown: the answer to the write was lost")
)

// OutcomeUnknownError is a write whose outcome is unknown
// (ErrOutcomeUnknown): which resource, which write, and why.
type OutcomeUnknownError struct {
	// Resource is the ARM ID of the resource written.
	Resource string
	// Op is the write, e.g. "writing route table <ID>".
	Op string
	// Err is the cause: the transport's error, or ARM's (or a front's)
	// answer.
	Err error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("%s: outcome unknown, the answer was lost (%v); the resource must be read back before it is written again", e.Op, e.Err)
}

func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }
func (e *OutcomeUnknownError) Unwrap() error        { return e.Err }

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
