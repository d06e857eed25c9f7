package azure

import (
	"strings"

	"github.com/routekeeper/routekeeper/internal/armerr"
)

// denied makes the armerr.DeniedError of an ARM refusal (status 0 for the
// error of a long-running operation), nil for any other error. What the
// message does not say about a deny policy is taken from additionalInfo,
// where ARM puts the policy assignment and definition.
func denied(status int, code string, body *armErrorBody) *armerr.DeniedError {
	d := armerr.NewDeniedError(status, code, body.Error.Message)
	if d == nil {
		return nil
	}
	if d.Target == "" {
		d.Target = body.Error.Target
	}
	for _, ai := range body.Error.AdditionalInfo {
		if !strings.EqualFold(ai.Type, "PolicyViolation") {
			continue
		}
		if d.PolicyAssignment == "" {
			d.PolicyAssignment = ai.Info.PolicyAssignmentID
		}
		if d.PolicyDefinition == "" {
			d.PolicyDefinition = ai.Info.PolicyDefinitionID
		}
	}
	return d
}
