package armtemplate

import (
	"testing"

	"github.com/google/uuid"
)

// TestUniqueString checks uniqueString() against outputs observed on Azure
// and published: the first four in KingslandConsulting/Kingsland.ArmLinter
// (src/Kingsland.ArmLinter/Functions/ArmFunctions_UniqueString.cs, from real
// deployments), the last in JasonWhall/go-azure-uniquestring's README
// (including the intermediate 64-bit hash).
func TestUniqueString(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"aaa"}, "zavj67f3en4hc"},
		{[]string{"bbb"}, "w5eragfxe33cy"},
		{[]string{"zzz"}, "cryksdzzzawae"},
		{[]string{"xxx", "yyy", "zzz"}, "lghi7k5js7itq"},
		{[]string{"hello", "world"}, "a7wkljktk6wne"},
	} {
		if got := uniqueString(tc.in); got != tc.want {
			t.Errorf("uniqueString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := murmur64([]byte("hello-world")); got != 571013382255652050 {
		t.Errorf("murmur64(hello-world) = %d, want 571013382255652050", got)
	}
}

// TestGUID checks guid(). No input/output pair observed on Azure was found
// to test against; what is checked is the algorithm Microsoft support
// describes (UUID v5, namespace 11fb06fb-712d-4ddd-98c7-e71bbd588830, the
// arguments joined with "-"): the v5 mechanics against RFC 9562's published
// vector, and the ARM derivation against google/uuid's independent v5
// implementation.
func TestGUID(t *testing.T) {
	dns := [16]byte(uuid.NameSpaceDNS)
	if got := nameUUID(dns, "www.example.com"); got != "2ed6657d-e927-568b-95e1-2665a8aea6a2" {
		t.Errorf("RFC 9562 vector: got %s", got)
	}
	ns := uuid.MustParse("11fb06fb-712d-4ddd-98c7-e71bbd588830")
	for _, in := range [][]string{{"myResourceGroup"}, {"a", "b"}, {"/subscriptions/s/resourceGroups/rg", "deployment"}, {"ünïcode"}} {
		want := uuid.NewSHA1(ns, []byte(joinDash(in))).String()
		if got := armGUID(in); got != want {
			t.Errorf("guid(%q) = %s, want %s", in, got, want)
		}
	}
}

func joinDash(s []string) string {
	out := ""
	for i, p := range s {
		if i > 0 {
			out += "-"
		}
		out += p
	}
	return out
}
