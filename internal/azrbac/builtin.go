package azrbac

import "strings"

// The built-in roles routekeeper's users meet, with Azure's role
// definition IDs, descriptions and permissions as Microsoft publishes them
// (learn.microsoft.com, azure/role-based-access-control/built-in-roles:
// privileged.md for Owner and Contributor, general.md for Reader,
// networking.md for Network Contributor).
const (
	OwnerID              = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
	ContributorID        = "b24988ac-6180-42a0-ab88-20f7382dd24c"
	ReaderID             = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
	NetworkContributorID = "4d97b98b-1d4f-4787-a291-c67834d212e7"
)

// BuiltInRoles returns the built-in role definitions, with IDs under
// /providers/Microsoft.Authorization/roleDefinitions (ARM also answers
// them under each subscription, /subscriptions/{s}/providers/...).
func BuiltInRoles() []RoleDefinition {
	perm := func(actions, notActions []string) []Permission {
		return []Permission{{Actions: actions, NotActions: notActions, DataActions: []string{}, NotDataActions: []string{}}}
	}
	role := func(id, name, desc string, p []Permission) RoleDefinition {
		return RoleDefinition{
			ID: "/providers/Microsoft.Authorization/roleDefinitions/" + id, Name: id, RoleName: name,
			Description: desc, RoleType: TypeBuiltInRole, Permissions: p, AssignableScopes: []string{RootScope},
		}
	}
	return []RoleDefinition{
		role(OwnerID, "Owner", "Grants full access to manage all resources, including the ability to assign roles in Azure RBAC.",
			perm([]string{"*"}, []string{})),
		role(ContributorID, "Contributor", "Grants full access to manage all resources, but does not allow you to assign roles in Azure RBAC, manage assignments in Azure Blueprints, or share image galleries.",
			perm([]string{"*"}, []string{
				"Microsoft.Authorization/*/Delete",
				"Microsoft.Authorization/*/Write",
				"Microsoft.Authorization/elevateAccess/Action",
				"Microsoft.Blueprint/blueprintAssignments/write",
				"Microsoft.Blueprint/blueprintAssignments/delete",
				"Microsoft.Compute/galleries/share/action",
				"Microsoft.Purview/consents/write",
				"Microsoft.Purview/consents/delete",
				"Microsoft.Resources/deploymentStacks/manageDenySetting/action",
				"Microsoft.Subscription/cancel/action",
				"Microsoft.Subscription/enable/action",
			})),
		role(ReaderID, "Reader", "View all resources, but does not allow you to make any changes.",
			perm([]string{"*/read"}, []string{})),
		role(NetworkContributorID, "Network Contributor", "Lets you manage networks, but not access to them.",
			perm([]string{
				"Microsoft.Authorization/*/read",
				"Microsoft.Insights/alertRules/*",
				"Microsoft.Network/*",
				"Microsoft.ResourceHealth/availabilityStatuses/read",
				"Microsoft.Resources/deployments/*",
				"Microsoft.Resources/subscriptions/resourceGroups/read",
				"Microsoft.Support/*",
			}, []string{})),
	}
}

// BuiltInRole finds a built-in role by its name ("Network Contributor"),
// its GUID or its ID, without regard to case.
func BuiltInRole(nameOrID string) (RoleDefinition, bool) {
	for _, r := range BuiltInRoles() {
		if strings.EqualFold(r.RoleName, nameOrID) || strings.EqualFold(r.Name, DefinitionName(nameOrID)) {
			return r, true
		}
	}
	return RoleDefinition{}, false
}
