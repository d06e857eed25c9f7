package armtemplate

import "strings"

// ParseMember reads a JSON document that holds a template, such as the
// body of a deployment request ({"properties": {"template": {...}}}), and
// returns the document and the template at the member path (names without
// regard to case). Line and column of template errors are the template's
// positions in the whole document, as ARM reports them for the request
// body. The document may be JSONC as az sends it: comments, and member
// names without quotes (az splices `template:` into the body unquoted).
// The template is nil when the member is absent or null; a document that
// is not JSON is an *Error with the line and column of the fault.
func ParseMember(data []byte, path ...string) (*Template, map[string]any, error) {
	positions := map[string]pos{}
	p := &jsonParser{src: string(data), line: 1, col: 1, bareKeys: true, positions: positions}
	if strings.HasPrefix(p.src, "\ufeff") {
		p.i = len("\ufeff")
	}
	p.skipSpace()
	v, err := p.value("")
	if err == nil {
		p.skipSpace()
		if p.i < len(p.src) {
			err = p.errf("Additional text encountered after finished reading JSON content: %s", p.peekRune())
		}
	}
	if err != nil {
		ae := err.(*Error)
		return nil, nil, &Error{Code: CodeInvalidTemplate, Line: ae.Line, Column: ae.Column, Err: ae,
			Message: "Deployment template parse failed: '" + ae.Message + "'."}
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, nil, invalidf("The request content must be a JSON object; it is of type '%s'.", typeName(v))
	}
	cur, prefix := any(doc), ""
	for _, name := range path {
		m, isObj := cur.(map[string]any)
		if !isObj {
			return nil, doc, nil
		}
		next, key, found := lookup(m, name)
		if !found {
			return nil, doc, nil
		}
		cur, prefix = next, prefix+"/"+escapePointer(key)
	}
	if cur == nil {
		return nil, doc, nil
	}
	m, isObj := cur.(map[string]any)
	if !isObj {
		return nil, doc, invalidf("The template must be a JSON object; it is of type '%s'.", typeName(cur))
	}
	own := map[string]pos{}
	for k, at := range positions {
		if rest, ok := strings.CutPrefix(k, prefix); ok && (rest == "" || rest[0] == '/') {
			own[rest] = at
		}
	}
	t, err := newTemplate(m, own)
	return t, doc, err
}
