package armtemplate

import (
	"errors"
	"fmt"
)

// CodeInvalidTemplate is the ARM error code for every template, parameter and
// expression error this package reports.
const CodeInvalidTemplate = "InvalidTemplate"

// Error is an ARM error: a code, ARM's message, and where ARM reports one the
// line and column in the template (1-based; 0 when unknown).
type Error struct {
	Code    string
	Message string
	Line    int
	Column  int
	// Err is the error this one wraps, if any.
	Err error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Err }

// ValidationMessage is the message as ARM's deployment validation answers
// it: "Deployment template validation failed: '<message>'.".
func (e *Error) ValidationMessage() string {
	return "Deployment template validation failed: '" + e.Message + "'."
}

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidTemplate, Message: fmt.Sprintf(format, args...)}
}

// exprDocs is the pointer ARM appends to expression errors.
const exprDocs = "Please see https://aka.ms/arm-template-expressions for usage details."

// wrapAt prefixes err's message with prefix (ARM's "The template resource
// 'x' at line ... is not valid: ..." style) keeping the innermost cause.
func wrapAt(err error, line, col int, format string, args ...any) error {
	if err == nil {
		return nil
	}
	prefix := fmt.Sprintf(format, args...)
	var ae *Error
	if errors.As(err, &ae) {
		out := &Error{Code: ae.Code, Message: prefix + ": " + ae.Message, Line: ae.Line, Column: ae.Column, Err: err}
		if line > 0 {
			out.Line, out.Column = line, col
		}
		return out
	}
	// Errors from the caller's Resources/Deployer are passed through with
	// context, not turned into template errors.
	return fmt.Errorf("%s: %w", prefix, err)
}
