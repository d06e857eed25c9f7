package armtemplate

import (
	"encoding/base64"
	"net/url"
	"strings"
	"unicode"
)

var stringFunctions = map[string]function{
	"concat":               {1, -1, fnConcat},
	"format":               {1, -1, fnFormat},
	"toLower":              fixed(1, strFn(strings.ToLower)),
	"toUpper":              fixed(1, strFn(strings.ToUpper)),
	"trim":                 fixed(1, strFn(func(s string) string { return strings.TrimFunc(s, unicode.IsSpace) })),
	"substring":            {2, 3, fnSubstring},
	"replace":              fixed(3, fnReplace),
	"split":                fixed(2, fnSplit),
	"startsWith":           fixed(2, fnStartsWith),
	"endsWith":             fixed(2, fnEndsWith),
	"indexOf":              fixed(2, fnIndexOf),
	"lastIndexOf":          fixed(2, fnLastIndexOf),
	"padLeft":              {2, 3, fnPadLeft},
	"string":               fixed(1, func(_ *evaluator, _ string, a []any) (any, error) { return stringOf(a[0]), nil }),
	"base64":               fixed(1, strFn(func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) })),
	"base64ToString":       fixed(1, fnBase64ToString),
	"base64ToJson":         fixed(1, fnBase64ToJSON),
	"uri":                  fixed(2, fnURI),
	"uriComponent":         fixed(1, strFn(escapeDataString)),
	"uriComponentToString": fixed(1, fnURIComponentToString),
	"dataUri":              fixed(1, fnDataURI),
	"dataUriToString":      fixed(1, fnDataURIToString),
	"uniqueString":         {1, -1, fnUniqueString},
	"guid":                 {1, -1, fnGUID},
	"newGuid":              fixed(0, fnNewGUID),
	"utcNow":               {0, 1, fnUTCNow},
}

func strFn(f func(string) string) func(*evaluator, string, []any) (any, error) {
	return func(_ *evaluator, name string, args []any) (any, error) {
		s, err := argString(name, args, 0)
		if err != nil {
			return nil, err
		}
		return f(s), nil
	}
}

// fnConcat joins strings, or arrays. ARM converts non-string scalars to
// strings when the first argument is not an array.
func fnConcat(_ *evaluator, name string, args []any) (any, error) {
	if _, ok := args[0].([]any); ok {
		out := []any{}
		for i, a := range args {
			switch x := a.(type) {
			case []any:
				out = append(out, x...)
			case nil:
			default:
				return nil, typeError(name, ordinal(i), "Array", a)
			}
		}
		return out, nil
	}
	var b strings.Builder
	for i, a := range args {
		switch a.(type) {
		case []any, map[string]any:
			return nil, typeError(name, ordinal(i), "String", a)
		}
		b.WriteString(stringOf(a))
	}
	return b.String(), nil
}

func runesOf(s string) []rune { return []rune(s) }

func fnSubstring(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	r := runesOf(s)
	start, err := argInt(name, args, 1)
	if err != nil {
		return nil, err
	}
	length := int64(len(r)) - start
	if len(args) == 3 {
		if length, err = argInt(name, args, 2); err != nil {
			return nil, err
		}
	}
	if start < 0 || length < 0 || start+length > int64(len(r)) {
		return nil, invalidf("The index and length parameters must refer to a location within the string. The index parameter: '%d', the length parameter: '%d', the length of the string parameter: '%d'. %s", start, length, len(r), exprDocs)
	}
	return string(r[start : start+length]), nil
}

func fnReplace(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	if ss[1] == "" {
		return nil, invalidf("The template language function 'replace' expects its second parameter to be a non-empty string. %s", exprDocs)
	}
	return strings.ReplaceAll(ss[0], ss[1], ss[2]), nil
}

func fnSplit(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	var delims []string
	switch d := args[1].(type) {
	case string:
		delims = []string{d}
	case []any:
		for _, e := range d {
			ds, ok := e.(string)
			if !ok {
				return nil, typeError(name, "second parameter", "String or Array of String", e)
			}
			delims = append(delims, ds)
		}
	default:
		return nil, typeError(name, "second parameter", "String or Array", args[1])
	}
	parts := []string{s}
	for _, d := range delims {
		if d == "" {
			continue
		}
		var next []string
		for _, p := range parts {
			next = append(next, strings.Split(p, d)...)
		}
		parts = next
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func fnStartsWith(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	return strings.HasPrefix(strings.ToLower(ss[0]), strings.ToLower(ss[1])), nil
}

func fnEndsWith(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	return strings.HasSuffix(strings.ToLower(ss[0]), strings.ToLower(ss[1])), nil
}

// runeIndex converts a byte offset in s to a character offset.
func runeIndex(s string, byteIdx int) int64 {
	if byteIdx < 0 {
		return -1
	}
	return int64(len([]rune(s[:byteIdx])))
}

func fnIndexOf(_ *evaluator, name string, args []any) (any, error) {
	if arr, ok := args[0].([]any); ok {
		for i, e := range arr {
			if deepEqual(e, args[1]) {
				return int64(i), nil
			}
		}
		return int64(-1), nil
	}
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	l := strings.ToLower(ss[0])
	return runeIndex(l, strings.Index(l, strings.ToLower(ss[1]))), nil
}

func fnLastIndexOf(_ *evaluator, name string, args []any) (any, error) {
	if arr, ok := args[0].([]any); ok {
		for i := len(arr) - 1; i >= 0; i-- {
			if deepEqual(arr[i], args[1]) {
				return int64(i), nil
			}
		}
		return int64(-1), nil
	}
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	l := strings.ToLower(ss[0])
	return runeIndex(l, strings.LastIndex(l, strings.ToLower(ss[1]))), nil
}

// maxPadLength bounds padLeft so a template cannot ask for gigabytes.
const maxPadLength = 16 * 1024

func fnPadLeft(_ *evaluator, name string, args []any) (any, error) {
	var s string
	switch v := args[0].(type) {
	case string:
		s = v
	case int64:
		s = stringOf(v)
	default:
		return nil, typeError(name, "first parameter", "String or Integer", args[0])
	}
	total, err := argInt(name, args, 1)
	if err != nil {
		return nil, err
	}
	if total > maxPadLength {
		return nil, invalidf("The template language function 'padLeft' expects its second parameter to be at most %d. %s", maxPadLength, exprDocs)
	}
	pad := " "
	if len(args) == 3 {
		if pad, err = argString(name, args, 2); err != nil {
			return nil, err
		}
		if len([]rune(pad)) != 1 {
			return nil, invalidf("The template language function 'padLeft' expects its third parameter to be a single character. %s", exprDocs)
		}
	}
	n := int(total) - len([]rune(s))
	if n <= 0 {
		return s, nil
	}
	return strings.Repeat(pad, n) + s, nil
}

func fnBase64ToString(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, invalidf("The template language function '%s' expects a valid base64 string: %v. %s", name, err, exprDocs)
	}
	return string(b), nil
}

func fnBase64ToJSON(ev *evaluator, name string, args []any) (any, error) {
	s, err := fnBase64ToString(ev, name, args)
	if err != nil {
		return nil, err
	}
	return fnJSON(ev, name, []any{s})
}

func fnURI(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(ss[0])
	if err != nil || !base.IsAbs() {
		return nil, invalidf("The template language function 'uri' expects its first parameter to be an absolute URI; '%s' is not. %s", ss[0], exprDocs)
	}
	rel, err := url.Parse(ss[1])
	if err != nil {
		return nil, invalidf("The template language function 'uri' expects its second parameter to be a URI; '%s' is not. %s", ss[1], exprDocs)
	}
	return base.ResolveReference(rel).String(), nil
}

// escapeDataString is .NET's Uri.EscapeDataString: everything but RFC 3986
// unreserved characters is percent-encoded as UTF-8.
func escapeDataString(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func fnURIComponentToString(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	out, err := url.PathUnescape(s)
	if err != nil {
		return nil, invalidf("The template language function '%s' expects a valid URI-encoded string: %v. %s", name, err, exprDocs)
	}
	return out, nil
}

func fnDataURI(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	return "data:text/plain;charset=utf8;base64," + base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func fnDataURIToString(_ *evaluator, name string, args []any) (any, error) {
	s, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	comma := strings.IndexByte(s, ',')
	if !strings.HasPrefix(s, "data:") || comma < 0 {
		return nil, invalidf("The template language function '%s' expects a data URI; '%s' is not. %s", name, truncate(s, 40), exprDocs)
	}
	meta, data := s[5:comma], s[comma+1:]
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, invalidf("The template language function '%s' expects valid base64 data: %v. %s", name, err, exprDocs)
		}
		return string(b), nil
	}
	out, err := url.PathUnescape(data)
	if err != nil {
		return nil, invalidf("The template language function '%s' expects valid URI-encoded data: %v. %s", name, err, exprDocs)
	}
	return out, nil
}
