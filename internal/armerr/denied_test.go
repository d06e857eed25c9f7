package armerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The messages are ARM's, as published in real answers (docs/fabric.md
// lists the sources), with their IDs shortened.
func TestNewDeniedError(t *testing.T) {
	for _, tc := range []struct {
		name          string
		status        int
		code, message string
		want          *DeniedError
	}{
		{
			name: "AuthorizationFailed", status: 403, code: "AuthorizationFailed",
			message: "The client 'b9bc1545' with object id 'b9bc1545' does not have authorization to perform action 'Microsoft.Storage/storageAccounts/write' over scope '/subscriptions/225e/resourcegroups/aro/providers/Microsoft.Storage/storageAccounts/c' or the scope is invalid. If access was recently granted, please refresh your credentials.",
			want: &DeniedError{Status: 403, Code: CodeAuthorizationFailed, Client: "b9bc1545", Principal: "b9bc1545",
				Action: "Microsoft.Storage/storageAccounts/write", Scope: "/subscriptions/225e/resourcegroups/aro/providers/Microsoft.Storage/storageAccounts/c"},
		},
		{
			name: "AuthorizationFailed of a user", status: 403, code: "authorizationfailed",
			message: "The client 'live.com#a@b.com' with object id '379d' does not have authorization to perform action 'Microsoft.Resources/subscriptions/resourcegroups/read' over scope '/subscriptions/f27a/resourcegroups/rg' or the scope is invalid.",
			want: &DeniedError{Status: 403, Code: CodeAuthorizationFailed, Client: "live.com#a@b.com", Principal: "379d",
				Action: "Microsoft.Resources/subscriptions/resourcegroups/read", Scope: "/subscriptions/f27a/resourcegroups/rg"},
		},
		{
			name: "LinkedAuthorizationFailed", status: 403, code: "LinkedAuthorizationFailed",
			message: "The client 'x' with object id 'y' has permission to perform action 'Microsoft.Compute/virtualMachineScaleSets/write' on scope '/subscriptions/s/resourceGroups/MC/providers/Microsoft.Compute/virtualMachineScaleSets/vmss'; however, it does not have permission to perform action 'Microsoft.ManagedIdentity/userAssignedIdentities/assign/action' on the linked scope(s) '/subscriptions/s/resourcegroups/e/providers/Microsoft.ManagedIdentity/userAssignedIdentities/e' or the linked scope(s) are invalid.",
			want: &DeniedError{Status: 403, Code: CodeLinkedAuthorizationFailed, Client: "x", Principal: "y",
				Action: "Microsoft.Compute/virtualMachineScaleSets/write", Scope: "/subscriptions/s/resourceGroups/MC/providers/Microsoft.Compute/virtualMachineScaleSets/vmss",
				LinkedAction: "Microsoft.ManagedIdentity/userAssignedIdentities/assign/action", LinkedScope: "/subscriptions/s/resourcegroups/e/providers/Microsoft.ManagedIdentity/userAssignedIdentities/e"},
		},
		{
			name: "LinkedAuthorizationFailed, several", status: 403, code: "LinkedAuthorizationFailed",
			message: "The client 'x' with object id 'y' has permission to perform action 'Microsoft.Network/virtualNetworks/subnets/write' on scope '/s/sn'; however, it does not have permission to perform action(s) 'Microsoft.Network/routeTables/join/action,Microsoft.Network/natGateways/join/action' on the linked scope(s) '/s/rt,/s/nat' (respectively) or the linked scope(s) are invalid.",
			want: &DeniedError{Status: 403, Code: CodeLinkedAuthorizationFailed, Client: "x", Principal: "y",
				Action: "Microsoft.Network/virtualNetworks/subnets/write", Scope: "/s/sn",
				LinkedAction: "Microsoft.Network/routeTables/join/action,Microsoft.Network/natGateways/join/action", LinkedScope: "/s/rt,/s/nat"},
		},
		{
			name: "ScopeLocked write", status: 409, code: "ScopeLocked",
			message: "The scope '/subscriptions/s/resourceGroups/IntroAzureRG/providers/Microsoft.Storage/storageAccounts/t' cannot perform write operation because following scope(s) are locked: '/subscriptions/s/resourcegroups/IntroAzureRG/providers/Microsoft.Storage/storageAccounts/t'. Please remove the lock and try again.",
			want: &DeniedError{Status: 409, Code: CodeScopeLocked, Operation: "write",
				Scope: "/subscriptions/s/resourceGroups/IntroAzureRG/providers/Microsoft.Storage/storageAccounts/t", Lock: "/subscriptions/s/resourcegroups/IntroAzureRG/providers/Microsoft.Storage/storageAccounts/t"},
		},
		{
			name: "ScopeLocked delete without the lock", status: 409, code: "ScopeLocked",
			message: "The scope '.../resourceGroups/az900-webapp-rg' cannot perform delete operation because following scope(s) are locked. Please remove the lock and try again.",
			want:    &DeniedError{Status: 409, Code: CodeScopeLocked, Operation: "delete", Scope: ".../resourceGroups/az900-webapp-rg"},
		},
		{
			name: "RequestDisallowedByPolicy", status: 403, code: "RequestDisallowedByPolicy",
			message: `Resource 'gkwgestorageac' was disallowed by policy. Policy identifiers: '[{"policyAssignment":{"name":"Secure transfer","id":"/subscriptions/56a6/providers/Microsoft.Authorization/policyAssignments/deny_http_storage"},"policyDefinition":{"name":"Secure transfer","id":"/providers/Microsoft.Authorization/policyDefinitions/404c"}}]'.`,
			want: &DeniedError{Status: 403, Code: CodeRequestDisallowedByPolicy, Target: "gkwgestorageac",
				PolicyAssignment: "/subscriptions/56a6/providers/Microsoft.Authorization/policyAssignments/deny_http_storage", PolicyDefinition: "/providers/Microsoft.Authorization/policyDefinitions/404c"},
		},
		{name: "not a refusal", status: 409, code: "AnotherOperationInProgress", message: "x", want: nil},
		{name: "unreadable message", status: 403, code: "AuthorizationFailed", message: "nope",
			want: &DeniedError{Status: 403, Code: CodeAuthorizationFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NewDeniedError(tc.status, tc.code, tc.message)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(DeniedError{}, "Message")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got == nil {
				return
			}
			if got.Message != tc.message {
				t.Errorf("Message = %q, want ARM's", got.Message)
			}
			wrapped := fmt.Errorf("writing: %w", got)
			var d *DeniedError
			if !errors.Is(wrapped, ErrDenied) || !errors.As(wrapped, &d) {
				t.Error("errors.Is(err, ErrDenied) / errors.As fail")
			}
		})
	}
	d := NewDeniedError(403, CodeLinkedAuthorizationFailed, "The client 'x' with object id 'y' has permission to perform action 'a' on scope 's'; however, it does not have permission to perform action(s) 'l1, l2' on the linked scope(s) 's1,s2' (respectively) or the linked scope(s) are invalid.")
	if diff := cmp.Diff([]string{"l1", "l2"}, d.LinkedActions()); diff != "" || len(d.LinkedScopes()) != 2 {
		t.Errorf("LinkedActions/LinkedScopes: %s %v", diff, d.LinkedScopes())
	}
	if DeniedStatus("ScopeLocked") != 409 || DeniedStatus(CodeAuthorizationFailed) != 403 {
		t.Error("DeniedStatus")
	}
}
