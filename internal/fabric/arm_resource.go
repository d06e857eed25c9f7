package fabric

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// target is the resource a request names: segs are
// subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Network/{type}/{name}[/{child}/{childName}].
type target struct {
	sub, rg, name, childName string
}

func (q *request) target() target {
	t := target{sub: q.segs[1], rg: q.segs[3]}
	if len(q.segs) > 7 {
		t.name = q.segs[7]
	}
	if len(q.segs) > 9 {
		t.childName = q.segs[9]
	}
	return t
}

// listPage is one page of a list: {"value": [...], "nextLink": ...}.
type listPage struct {
	Value    []json.RawMessage `json:"value"`
	NextLink *string           `json:"nextLink,omitempty"`
}

// withEtag adds the ETag header of a resource to a response.
func withEtag(etag string) http.Header {
	h := http.Header{}
	if etag != "" {
		h.Set("ETag", etag)
	}
	return h
}

func encode(v any) ([]byte, error) { return json.Marshal(v) }

// locationOf normalises a requested location: 400 LocationRequired when
// it is missing, 400 InvalidResourceLocation when it differs from the
// location of the existing resource.
func locationOf(loc *string, existing, name, rg string) (string, error) {
	l := normalizeLocation(str(loc))
	if l == "" {
		if existing != "" {
			return existing, nil
		}
		return "", badRequest("LocationRequired", "The location property is required for this definition.")
	}
	if existing != "" && l != existing {
		return "", newError(http.StatusConflict, "InvalidResourceLocation",
			"The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
			name, existing, rg, l)
	}
	return l, nil
}

func tagsOf(in map[string]*string) map[string]*string {
	if in == nil {
		return nil
	}
	out := make(map[string]*string, len(in))
	for k, v := range in {
		out[k] = ptr(str(v))
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

// checkTags applies Azure's tag rules to the tags of a write.
func checkTags(tags map[string]*string) error {
	if len(tags) > maxTags {
		return badRequest("InvalidTagCount", "A resource can have at most %d tags; the request has %d.", maxTags, len(tags))
	}
	var bad []string
	for k, v := range tags {
		switch {
		case k == "" || len(k) > maxTagNameLength:
			return badRequest("InvalidTagNameLength", "Tag name '%s' must be 1 to %d characters long.", k, maxTagNameLength)
		case len(str(v)) > maxTagValueLength:
			return badRequest("InvalidTagValueLength", "The value of tag '%s' is %d characters long; at most %d are allowed.", k, len(str(v)), maxTagValueLength)
		case strings.ContainsAny(k, "<>%&\\?/") || strings.ContainsFunc(k, unicode.IsControl):
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return badRequest("InvalidTagNameCharacters", "The tag names '%s' have reserved characters '<,>,%%,&,\\,?,/' or control characters.", strings.Join(bad, ","))
	}
	return nil
}

// sameContent reports whether a stored document and the one a PUT would
// store differ only in etags and provisioning states: such a PUT is a
// no-op, and Azure answers it 200 Succeeded with the resource as it is.
func sameContent(stored []byte, next any) bool {
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

// unchanged is the answer to a no-op PUT: 200 with the resource as stored
// (provisioningState Succeeded) and its etag, and no operation to poll.
func unchanged(body any, etag string) *response {
	return &response{status: http.StatusOK, body: body, header: withEtag(etag)}
}

// decodeTags reads the body of a PATCH of the tags ({"tags": {...}}) and
// applies Azure's tag rules.
func decodeTags(body []byte) (map[string]*string, error) {
	var in struct {
		Tags map[string]*string `json:"tags"`
	}
	if err := decodeObject(body, &in); err != nil {
		return nil, err
	}
	if err := checkTags(in.Tags); err != nil {
		return nil, err
	}
	return in.Tags, nil
}

// inlineNames are the names of the children a PUT lists inline (a route
// table's routes, a network's subnets, ...), as they are checked.
type inlineNames map[string]bool

// add checks the next child's name: valid, and not the name of an earlier
// one (Azure's DuplicateResourceName; dupFormat says so, with the
// parent's name and then the child's).
func (seen inlineNames) add(name, dupFormat, parent string) error {
	if !validName(name) {
		return errInvalidName(name)
	}
	if seen[key(name)] {
		return badRequest("DuplicateResourceName", dupFormat, parent, name)
	}
	seen[key(name)] = true
	return nil
}

// lookupFold finds k in m without regard to case, as ARM matches the
// fixed segments of a path.
func lookupFold[V any](m map[string]V, k string) (V, bool) {
	for name, v := range m {
		if strings.EqualFold(name, k) {
			return v, true
		}
	}
	var zero V
	return zero, false
}
