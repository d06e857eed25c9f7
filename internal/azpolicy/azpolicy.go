// Package azpolicy is Azure Policy's deny evaluation, without I/O: policy
// definitions and assignments read from their ARM JSON, and whether a
// deny policy refuses a resource write, given the resource as the write
// would leave it.
//
// The fabric (internal/fabric) refuses writes with it (403
// RequestDisallowedByPolicy), and routekeeper's doctor uses it on the
// assignments and definitions it reads from ARM to tell, before writing,
// which of its writes a deny policy would refuse.
//
// The subset of the policy language it understands, refused with a
// *RuleError when a definition is parsed:
//
//   - the logical operators allOf, anyOf and not;
//   - field conditions with equals, notEquals, in, notIn, exists, like,
//     notLike, contains and notContains; strings compare without regard
//     to case; a missing field equals nothing and notEquals everything;
//   - the fields type, name, location, id, kind, tags, tags['k'] (and
//     tags.k), and the aliases of the properties routekeeper writes (route
//     tables and their routes, virtual networks and subnets, network
//     interfaces, NAT gateways); an alias of another resource type reads
//     as missing;
//   - a [*] alias holds when the condition holds for every member of the
//     array, so for an empty one (Azure's "Author policies for array
//     properties"): "some route is an appliance" is written
//     not: {field: ...routes[*].nextHopType, notEquals: VirtualAppliance};
//   - "[parameters('name')]" as a condition's value and as the effect,
//     from the assignment, else the definition's defaultValue; every
//     reference must be declared;
//   - mode All, or Indexed (the default): only top-level resource types
//     are evaluated (see IndexedType).
//
// Not supported: count, value conditions, template functions other than
// parameters(), expressions in field, match and the comparison operators
// (greater, less...), policy set definitions (initiatives), resource
// provider modes, exemptions, and effects other than deny (Evaluate
// reports the effect and whether the rule matched, but only Deny refuses).
package azpolicy
