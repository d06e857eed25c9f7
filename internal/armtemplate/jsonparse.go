package armtemplate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pos is a 1-based line and column in a JSON text.
type pos struct{ line, col int }

// jsonParser is a small JSON reader that, unlike encoding/json, knows where
// each object member starts (ARM reports parameters and resources by line
// and column), accepts the comments ARM accepts in templates, and in lenient
// mode accepts single-quoted strings as the json() function does.
type jsonParser struct {
	src       string
	i         int
	line, col int
	lenient   bool
	// bareKeys accepts member names without quotes, as Json.NET does: the
	// body az sends a deployment in holds `template:` so.
	bareKeys bool
	// positions maps a JSON pointer ("/parameters/x", "/resources/0") to
	// where that value starts. Nil when positions are not wanted.
	positions map[string]pos
}

func parseJSON(src string, lenient bool, positions map[string]pos) (any, error) {
	p := &jsonParser{src: src, line: 1, col: 1, lenient: lenient, positions: positions}
	if strings.HasPrefix(p.src, "\ufeff") {
		p.i = len("\ufeff")
	}
	p.skipSpace()
	v, err := p.value("")
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i < len(p.src) {
		return nil, p.errf("Additional text encountered after finished reading JSON content: %s", p.peekRune())
	}
	return v, nil
}

func (p *jsonParser) errf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidTemplate,
		Message: fmt.Sprintf("%s Line %d, position %d.", fmt.Sprintf(format, args...), p.line, p.col),
		Line:    p.line, Column: p.col}
}

func (p *jsonParser) peekRune() string {
	r, _ := utf8.DecodeRuneInString(p.src[p.i:])
	return string(r)
}

func (p *jsonParser) advance(n int) {
	for k := 0; k < n && p.i < len(p.src); k++ {
		if p.src[p.i] == '\n' {
			p.line++
			p.col = 1
		} else if p.src[p.i]&0xC0 != 0x80 { // count runes, not bytes
			p.col++
		}
		p.i++
	}
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			p.advance(1)
		case c == '/' && strings.HasPrefix(p.src[p.i:], "//"):
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.advance(1)
			}
		case c == '/' && strings.HasPrefix(p.src[p.i:], "/*"):
			end := strings.Index(p.src[p.i+2:], "*/")
			if end < 0 {
				p.advance(len(p.src) - p.i)
				return
			}
			p.advance(end + 4)
		default:
			return
		}
	}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (p *jsonParser) value(path string) (any, error) {
	if p.i >= len(p.src) {
		return nil, p.errf("Unexpected end when reading JSON.")
	}
	if p.positions != nil {
		p.positions[path] = pos{p.line, p.col}
	}
	c := p.src[p.i]
	switch {
	case c == '{':
		return p.object(path)
	case c == '[':
		return p.array(path)
	case c == '"' || (c == '\'' && p.lenient):
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case strings.HasPrefix(p.src[p.i:], "true"):
		p.advance(4)
		return true, nil
	case strings.HasPrefix(p.src[p.i:], "false"):
		p.advance(5)
		return false, nil
	case strings.HasPrefix(p.src[p.i:], "null"):
		p.advance(4)
		return nil, nil
	}
	return nil, p.errf("Unexpected character encountered while parsing value: %s.", p.peekRune())
}

func (p *jsonParser) object(path string) (any, error) {
	p.advance(1)
	out := map[string]any{}
	p.skipSpace()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.advance(1)
		return out, nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, p.errf("Unexpected end when reading JSON.")
		}
		var key string
		if c := p.src[p.i]; p.bareKeys && isIdentStart(c) {
			key = p.ident()
		} else {
			if c != '"' && !(c == '\'' && p.lenient) {
				return nil, p.errf("Invalid property identifier character: %s.", p.peekRune())
			}
			var err error
			if key, err = p.str(); err != nil {
				return nil, err
			}
		}
		p.skipSpace()
		if p.i >= len(p.src) || p.src[p.i] != ':' {
			return nil, p.errf("Invalid character after parsing property name. Expected ':'.")
		}
		p.advance(1)
		p.skipSpace()
		v, err := p.value(path + "/" + escapePointer(key))
		if err != nil {
			return nil, err
		}
		out[key] = v
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, p.errf("Unexpected end when reading JSON.")
		}
		switch p.src[p.i] {
		case ',':
			p.advance(1)
			p.skipSpace()
			if p.i < len(p.src) && p.src[p.i] == '}' { // trailing comma, as Json.NET allows
				p.advance(1)
				return out, nil
			}
		case '}':
			p.advance(1)
			return out, nil
		default:
			return nil, p.errf("After parsing a value an unexpected character was encountered: %s.", p.peekRune())
		}
	}
}

func (p *jsonParser) array(path string) (any, error) {
	p.advance(1)
	out := []any{}
	for n := 0; ; n++ {
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, p.errf("Unexpected end when reading JSON.")
		}
		if p.src[p.i] == ']' {
			p.advance(1)
			return out, nil
		}
		v, err := p.value(path + "/" + strconv.Itoa(n))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipSpace()
		if p.i >= len(p.src) {
			return nil, p.errf("Unexpected end when reading JSON.")
		}
		switch p.src[p.i] {
		case ',':
			p.advance(1)
		case ']':
		default:
			return nil, p.errf("After parsing a value an unexpected character was encountered: %s.", p.peekRune())
		}
	}
}

func (p *jsonParser) str() (string, error) {
	quote := p.src[p.i]
	p.advance(1)
	var b strings.Builder
	for {
		if p.i >= len(p.src) {
			return "", p.errf("Unterminated string. Expected delimiter: %c.", quote)
		}
		c := p.src[p.i]
		switch {
		case c == quote:
			p.advance(1)
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.src) {
				return "", p.errf("Unterminated string. Expected delimiter: %c.", quote)
			}
			e := p.src[p.i+1]
			switch e {
			case '"', '\\', '/', '\'':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if p.i+6 > len(p.src) {
					return "", p.errf("Bad JSON escape sequence.")
				}
				n, err := strconv.ParseUint(p.src[p.i+2:p.i+6], 16, 16)
				if err != nil {
					return "", p.errf("Bad JSON escape sequence: \\u%s.", p.src[p.i+2:p.i+6])
				}
				r := rune(n)
				p.advance(6)
				if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(p.src[p.i:], "\\u") && p.i+6 <= len(p.src) {
					if lo, err := strconv.ParseUint(p.src[p.i+2:p.i+6], 16, 16); err == nil && lo >= 0xDC00 && lo < 0xE000 {
						r = (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
						p.advance(6)
					}
				}
				b.WriteRune(r)
				continue
			default:
				return "", p.errf("Bad JSON escape sequence: \\%c.", e)
			}
			p.advance(2)
		default:
			_, size := utf8.DecodeRuneInString(p.src[p.i:])
			b.WriteString(p.src[p.i : p.i+size])
			p.advance(size)
		}
	}
}

func (p *jsonParser) number() (any, error) {
	start := p.i
	for p.i < len(p.src) && strings.IndexByte("+-0123456789.eE", p.src[p.i]) >= 0 {
		p.advance(1)
	}
	text := p.src[start:p.i]
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, p.errf("Input string '%s' is not a valid number.", text)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 && !strings.ContainsAny(text, ".eE") {
		return int64(f), nil
	}
	return f, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ident reads an unquoted member name.
func (p *jsonParser) ident() string {
	start := p.i
	for p.i < len(p.src) && (isIdentStart(p.src[p.i]) || p.src[p.i] >= '0' && p.src[p.i] <= '9') {
		p.advance(1)
	}
	return p.src[start:p.i]
}
