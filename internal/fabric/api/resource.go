package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// Target is the resource a request names: segs are
// subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/{type}/{name}[/{child}/{childName}].
type Target struct {
	Sub, RG, Name, ChildName string
}

func (q *Request) Target() Target {
	t := Target{Sub: q.Segs[1], RG: q.Segs[3]}
	if len(q.Segs) > 7 {
		t.Name = q.Segs[7]
	}
	if len(q.Segs) > 9 {
		t.ChildName = q.Segs[9]
	}
	return t
}

// ListPage is one page of a list: {"value": [...], "nextLink": ...}.
type ListPage struct {
	Value    []json.RawMessage `json:"value"`
	NextLink *string           `json:"nextLink,omitempty"`
}

// WithEtag adds the ETag header of a resource to a response.
func WithEtag(etag string) http.Header {
	h := http.Header{}
	if etag != "" {
		h.Set("ETag", etag)
	}
	return h
}

func Encode(v any) ([]byte, error) { return json.Marshal(v) }

// LocationOf normalises a requested location: 400 LocationRequired when
// it is missing, 400 InvalidResourceLocation when it differs from the
// location of the existing resource.
func LocationOf(loc *string, existing, name, rg string) (string, error) {
	l := NormalizeLocation(Str(loc))
	if l == "" {
		if existing != "" {
			return existing, nil
		}
		return "", BadRequest("LocationRequired", "The location property is required for this definition.")
	}
	if existing != "" && l != existing {
		return "", NewError(http.StatusConflict, "InvalidResourceLocation",
			"The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
			name, existing, rg, l)
	}
	return l, nil
}

func TagsOf(in map[string]*string) map[string]*string {
	if in == nil {
		return nil
	}
	out := make(map[string]*string, len(in))
	for k, v := range in {
		out[k] = Ptr(Str(v))
	}
	return out
}

// Azure's tag rules: at most 50 tags; names up to 512 characters without
// < > % & \ ? / or control characters; values up to 256 characters.
const (
	maxTags           = 50
	maxTagNameLength  = 512
	maxTagValueLength = 256
)

// CheckTags applies Azure's tag rules to the tags of a write.
func CheckTags(tags map[string]*string) error {
	if len(tags) > maxTags {
		return BadRequest("InvalidTagCount", "A resource can have at most %d tags; the request has %d.", maxTags, len(tags))
	}
	var bad []string
	for k, v := range tags {
		switch {
		case k == "" || len(k) > maxTagNameLength:
			return BadRequest("InvalidTagNameLength", "Tag name '%s' must be 1 to %d characters long.", k, maxTagNameLength)
		case len(Str(v)) > maxTagValueLength:
			return BadRequest("InvalidTagValueLength", "The value of tag '%s' is %d characters long; at most %d are allowed.", k, len(Str(v)), maxTagValueLength)
		case strings.ContainsAny(k, "<>%&\\?/") || strings.ContainsFunc(k, unicode.IsControl):
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return BadRequest("InvalidTagNameCharacters", "The tag names '%s' have reserved characters '<,>,%%,&,\\,?,/' or control characters.", strings.Join(bad, ","))
	}
	return nil
}

// SameContent reports whether a stored document and the one a PUT would
// store differ only in etags and provisioning states: such a PUT is a
// no-op, and Azure answers it 200 Succeeded with the resource as it is.
func SameContent(stored []byte, next any) bool {
	b, err := json.Marshal(next)
	if err != nil {
		return false
	}
	var x, y any
	if json.Unmarshal(stored, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(stripVolatile(x), stripVolatile(y))
}

func stripVolatile(doc any) any {
	switch d := doc.(type) {
	case map[string]any:
		delete(d, "etag")
		delete(d, "provisioningState")
		for _, v := range d {
			stripVolatile(v)
		}
	case []any:
		for _, v := range d {
			stripVolatile(v)
		}
	}
	return doc
}

// Unchanged is the answer to a no-op PUT: 200 with the resource as stored
// (provisioningState Succeeded) and its etag, and no operation to poll.
func Unchanged(body any, etag string) *Response {
	return &Response{Status: http.StatusOK, Body: body, Header: WithEtag(etag)}
}

// DecodeTags reads the body of a PATCH of the tags ({"tags": {...}}) and
// applies Azure's tag rules.
func DecodeTags(body []byte) (map[string]*string, error) {
	var in struct {
		Tags map[string]*string `json:"tags"`
	}
	if err := DecodeObject(body, &in); err != nil {
		return nil, err
	}
	if err := CheckTags(in.Tags); err != nil {
		return nil, err
	}
	return in.Tags, nil
}

// InlineNames are the names of the children a PUT lists inline (a route
// table's routes, a network's subnets, ...), as they are checked.
type InlineNames map[string]bool

// Add checks the next child's name: valid, and not the name of an earlier
// one (Azure's DuplicateResourceName; dupFormat says so, with the
// parent's name and then the child's).
func (seen InlineNames) Add(name, dupFormat, parent string) error {
	if !ValidName(name) {
		return InvalidName(name)
	}
	if seen[Key(name)] {
		return BadRequest("DuplicateResourceName", dupFormat, parent, name)
	}
	seen[Key(name)] = true
	return nil
}

// LookupFold finds k in m without regard to case, as ARM matches the
// fixed segments of a path.
func LookupFold[V any](m map[string]V, k string) (V, bool) {
	for name, v := range m {
		if strings.EqualFold(name, k) {
			return v, true
		}
	}
	var zero V
	return zero, false
}
