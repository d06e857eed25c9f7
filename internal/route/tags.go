package route

import (
	"fmt"
	"net/netip"
	"strings"
)

// Route table tags besides ClaimTag. They are written by routekeeper only;
// keys compare case-insensitively, as ARM's do.
const (
	// ClusterCIDRsTag records the claiming cluster's pod CIDRs
	// (comma-separated), written with the claim, so that another cluster
	// refused by the claim can say whether their pod CIDRs overlap.
	ClusterCIDRsTag = ClaimTag + "-cidrs"
	// MigratedToTag marks a table routekeeper migrated away from: its value
	// is the ID of the table that replaced it. A controller configured with
	// the old table switches to the new one instead of fighting the
	// migration.
	MigratedToTag = "routekeeper-migrated-to"
	// MigratedFromTag marks the new table of a migration with the ID of the
	// old one, so that a controller still on the old table recognises a
	// subnet moved by the migration and leaves it alone.
	MigratedFromTag = "routekeeper-migrated-from"
)

// MaxTagValueLength is the longest tag value ARM accepts.
const MaxTagValueLength = 256

// Tag returns the value of the tag key (compared case-insensitively), ""
// when the table has none.
func (t *Table) Tag(key string) string {
	if t == nil {
		return ""
	}
	if v, ok := t.Tags[key]; ok {
		return v
	}
	for k, v := range t.Tags {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// SetTag sets tag key in tags, reusing the spelling of an existing key that
// differs only in case (ARM keeps one spelling per key).
func SetTag(tags map[string]string, key, value string) {
	for k := range tags {
		if strings.EqualFold(k, key) {
			tags[k] = value
			return
		}
	}
	tags[key] = value
}

// DeleteTag removes tag key (compared case-insensitively) from tags.
func DeleteTag(tags map[string]string, key string) {
	for k := range tags {
		if strings.EqualFold(k, key) {
			delete(tags, k)
		}
	}
}

// FormatCIDRs is the value of ClusterCIDRsTag for cidrs.
func FormatCIDRs(cidrs []netip.Prefix) string {
	parts := make([]string, len(cidrs))
	for i, c := range cidrs {
		parts[i] = c.Masked().String()
	}
	return strings.Join(parts, ",")
}

// ParseCIDRs reads a ClusterCIDRsTag value.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("tag %s: %q is not a CIDR", ClusterCIDRsTag, part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// OverlappingCIDRs returns the prefixes of a that overlap some prefix of b.
func OverlappingCIDRs(a, b []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range a {
		for _, y := range b {
			if x.Overlaps(y) {
				out = append(out, x)
				break
			}
		}
	}
	return out
}
