package api

import (
	"net/netip"
	"regexp"
	"strings"
)

// DefaultSubscription is the subscription ID used when none is given. The
// fabric accepts any subscription ID; this one is only a convention.
const DefaultSubscription = "00000000-0000-0000-0000-000000000000"

// Resource types, as they appear in paths and in the "type" property.
const (
	TypeRouteTables     = "routeTables"
	TypeVirtualNetworks = "virtualNetworks"
	ChildRoutes         = "routes"
	ChildSubnets        = "subnets"

	ArmTypeRouteTable     = "Microsoft.Network/routeTables"
	ArmTypeRoute          = "Microsoft.Network/routeTables/routes"
	ArmTypeVirtualNetwork = "Microsoft.Network/virtualNetworks"
	ArmTypeSubnet         = "Microsoft.Network/virtualNetworks/subnets"
	ArmTypeResourceGroup  = "Microsoft.Resources/resourceGroups"

	NetworkNamespace   = "Microsoft.Network"
	ResourcesNamespace = "Microsoft.Resources"
)

// Key is the case-insensitive form of an ARM ID or name: ARM compares IDs
// and names without regard to case, so every lookup goes through key.
func Key(s string) string { return strings.ToLower(s) }

func RGID(sub, rg string) string { return "/subscriptions/" + sub + "/resourceGroups/" + rg }

func ResourceID(sub, rg, typ, name string) string {
	return RGID(sub, rg) + "/providers/" + NetworkNamespace + "/" + typ + "/" + name
}

func ChildID(parentID, child, name string) string { return parentID + "/" + child + "/" + name }

// armID is a parsed Microsoft.Network resource ID: a route table, a
// virtual network or one of their children (parseNetworkID), or a
// top-level resource of another type (parseTopID).
type armID struct {
	Sub, RG, Type, Name string
	Child, ChildName    string // "" for a top-level resource
}

func (a armID) ParentID() string { return ResourceID(a.Sub, a.RG, a.Type, a.Name) }

func ParseNetworkID(id string) (armID, bool) {
	segs := splitNetworkID(id)
	if segs == nil {
		return armID{}, false
	}
	a := armID{Sub: segs[1], RG: segs[3], Name: segs[7]}
	switch {
	case strings.EqualFold(segs[6], TypeRouteTables):
		a.Type = TypeRouteTables
	case strings.EqualFold(segs[6], TypeVirtualNetworks):
		a.Type = TypeVirtualNetworks
	default:
		return armID{}, false
	}
	if len(segs) == 10 {
		a.ChildName = segs[9]
		switch {
		case a.Type == TypeRouteTables && strings.EqualFold(segs[8], ChildRoutes):
			a.Child = ChildRoutes
		case a.Type == TypeVirtualNetworks && strings.EqualFold(segs[8], ChildSubnets):
			a.Child = ChildSubnets
		default:
			return armID{}, false
		}
	}
	return a, true
}

// ParseTopID parses the ID of a top-level Microsoft.Network resource of
// type typ (any type: networkSecurityGroups, networkInterfaces, ...),
// case-insensitively; Type is typ.
func ParseTopID(id, typ string) (armID, bool) {
	segs := splitNetworkID(id)
	if len(segs) != 8 || !strings.EqualFold(segs[6], typ) {
		return armID{}, false
	}
	return armID{Sub: segs[1], RG: segs[3], Type: typ, Name: segs[7]}, true
}

// splitNetworkID splits /subscriptions/{s}/resourceGroups/{rg}/providers/
// Microsoft.Network/{type}/{name}[/{child}/{childName}] into its segments:
// nil when id is not one, or names no subscription, group or resource.
func splitNetworkID(id string) []string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) != 8 && len(segs) != 10 {
		return nil
	}
	if !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") ||
		!strings.EqualFold(segs[4], "providers") || !strings.EqualFold(segs[5], NetworkNamespace) {
		return nil
	}
	if segs[1] == "" || segs[3] == "" || segs[7] == "" {
		return nil
	}
	return segs
}

// nameRE is Azure's rule for Microsoft.Network resource names: 1-80
// characters, letters, digits, '_', '.', '-'; beginning with a letter or
// digit and ending with a letter, digit or '_'.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?$`)

func ValidName(name string) bool { return nameRE.MatchString(name) }

// rgNameRE is ARM's rule for resource group names: 1-90 characters,
// letters, digits, '_', '-', '.', '(' and ')', not ending with '.'.
var rgNameRE = regexp.MustCompile(`^[-\w.()]{0,89}[-\w()]$`)

func ValidRGName(name string) bool { return rgNameRE.MatchString(name) }

// NormalizeLocation turns "East US" into "eastus", as ARM does.
func NormalizeLocation(loc string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(loc), " ", ""))
}

// ServiceTagRE matches service tags accepted as a route address prefix
// (AzureCloud, Storage.WestEurope, ...).
var ServiceTagRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9]+)?$`)

// PrefixProblem says why s is not a valid CIDR prefix: "" when it is. It
// distinguishes a prefix with host bits set (Azure's InvalidCIDRNotation,
// with the prefix it should have been) from text that is not a prefix.
func PrefixProblem(s string) (p netip.Prefix, code string, want string) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, "InvalidAddressPrefixFormat", ""
	}
	if p.Addr().Zone() != "" {
		return netip.Prefix{}, "InvalidAddressPrefixFormat", ""
	}
	if p.Masked() != p {
		return netip.Prefix{}, "InvalidCIDRNotation", p.Masked().String()
	}
	return p, "", ""
}
