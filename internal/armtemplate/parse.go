package armtemplate

import (
	"fmt"
	"strconv"
	"strings"
)

// An expression is the text between the brackets of a template string
// "[...]": function calls, single-quoted string literals ('' escapes a
// quote), integer literals, and member (.name) and index ([expr]) access.

type exprKind int

const (
	exprString exprKind = iota
	exprInt
	exprFloat
	exprCall
	exprMember // X.Name
	exprIndex  // X[Index]
)

type expr struct {
	kind  exprKind
	str   string  // string literal; function or member name
	num   int64   // integer literal
	fnum  float64 // float literal
	args  []*expr // call arguments
	x     *expr   // member/index target
	index *expr   // index expression
	pos   int     // offset in the expression text
}

// isExpression reports whether a template string is an expression, and
// returns its text. "[[" escapes a literal "[": such a string is a literal
// with the first bracket removed.
func isExpression(s string) (string, bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return "", false
	}
	if s[1] == '[' {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// literalOf is the value of a non-expression template string: the escape
// "[[" loses its first bracket.
func literalOf(s string) string {
	if strings.HasPrefix(s, "[[") && strings.HasSuffix(s, "]") {
		return s[1:]
	}
	return s
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tString
	tInt
	tFloat
	tLParen
	tRParen
	tLBrack
	tRBrack
	tComma
	tDot
)

var tokNames = map[tokKind]string{tEOF: "EndOfData", tIdent: "Identifier", tString: "String", tInt: "Integer",
	tFloat: "Float", tLParen: "LeftParenthesis", tRParen: "RightParenthesis", tLBrack: "LeftSquareBracket",
	tRBrack: "RightSquareBracket", tComma: "Comma", tDot: "Dot"}

type token struct {
	kind tokKind
	text string
	pos  int
}

func lexExpr(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '(':
			out = append(out, token{tLParen, "(", i})
			i++
		case c == ')':
			out = append(out, token{tRParen, ")", i})
			i++
		case c == '[':
			out = append(out, token{tLBrack, "[", i})
			i++
		case c == ']':
			out = append(out, token{tRBrack, "]", i})
			i++
		case c == ',':
			out = append(out, token{tComma, ",", i})
			i++
		case c == '.':
			out = append(out, token{tDot, ".", i})
			i++
		case c == '\'':
			start := i
			i++
			var b strings.Builder
			closed := false
			for i < len(src) {
				if src[i] == '\'' {
					if i+1 < len(src) && src[i+1] == '\'' {
						b.WriteByte('\'')
						i += 2
						continue
					}
					i++
					closed = true
					break
				}
				b.WriteByte(src[i])
				i++
			}
			if !closed {
				return nil, invalidf("The language expression '%s' is not valid: the string literal starting at position '%d' is not terminated. %s", src, start, exprDocs)
			}
			out = append(out, token{tString, b.String(), start})
		case c == '-' || c == '+' || (c >= '0' && c <= '9'):
			start := i
			i++
			for i < len(src) && src[i] >= '0' && src[i] <= '9' {
				i++
			}
			kind := tInt
			if i+1 < len(src) && src[i] == '.' && src[i+1] >= '0' && src[i+1] <= '9' {
				kind = tFloat
				i++
				for i < len(src) && src[i] >= '0' && src[i] <= '9' {
					i++
				}
			}
			text := src[start:i]
			if text == "-" || text == "+" {
				return nil, invalidf("The language expression '%s' is not valid: the string character '%c' at position '%d' is not expected. %s", src, c, start, exprDocs)
			}
			out = append(out, token{kind, text, start})
		case c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			start := i
			for i < len(src) && (src[i] == '_' || src[i] == '$' || (src[i]|0x20 >= 'a' && src[i]|0x20 <= 'z') || (src[i] >= '0' && src[i] <= '9')) {
				i++
			}
			out = append(out, token{tIdent, src[start:i], start})
		default:
			return nil, invalidf("The language expression '%s' is not valid: the string character '%c' at position '%d' is not expected. %s", src, c, i, exprDocs)
		}
	}
	out = append(out, token{tEOF, "", len(src)})
	return out, nil
}

type exprParser struct {
	src  string
	toks []token
	i    int
	// depth guards against stack exhaustion on hostile input.
	depth int
}

const maxExprDepth = 256

// parseExpr parses the text inside "[...]".
func parseExpr(src string) (*expr, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &exprParser{src: src, toks: toks}
	e, err := p.expression()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(tEOF, t)
	}
	return e, nil
}

func (p *exprParser) peek() token { return p.toks[p.i] }

func (p *exprParser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *exprParser) unexpected(want tokKind, got token) error {
	return invalidf("Unable to parse language expression '%s': expected token '%s' and actual '%s'. %s", p.src, tokNames[want], tokNames[got.kind], exprDocs)
}

func (p *exprParser) expression() (*expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return nil, invalidf("The language expression '%s' is nested too deeply. %s", truncate(p.src, 80), exprDocs)
	}
	t := p.next()
	var e *expr
	switch t.kind {
	case tString:
		e = &expr{kind: exprString, str: t.text, pos: t.pos}
	case tInt:
		n, err := strconv.ParseInt(strings.TrimPrefix(t.text, "+"), 10, 64)
		if err != nil {
			return nil, invalidf("The language expression '%s' is not valid: the integer '%s' is out of range. %s", p.src, t.text, exprDocs)
		}
		e = &expr{kind: exprInt, num: n, pos: t.pos}
	case tFloat:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, invalidf("The language expression '%s' is not valid: the number '%s' is not valid. %s", p.src, t.text, exprDocs)
		}
		e = &expr{kind: exprFloat, fnum: f, pos: t.pos}
	case tIdent:
		name := t.text
		if p.peek().kind == tDot { // namespace.function: a user-defined function
			p.next()
			fn := p.next()
			if fn.kind != tIdent {
				return nil, p.unexpected(tIdent, fn)
			}
			name += "." + fn.text
		}
		if lp := p.next(); lp.kind != tLParen {
			return nil, p.unexpected(tLParen, lp)
		}
		call := &expr{kind: exprCall, str: name, pos: t.pos}
		if p.peek().kind == tRParen {
			p.next()
		} else {
			for {
				arg, err := p.expression()
				if err != nil {
					return nil, err
				}
				call.args = append(call.args, arg)
				sep := p.next()
				if sep.kind == tRParen {
					break
				}
				if sep.kind != tComma {
					return nil, p.unexpected(tRParen, sep)
				}
			}
		}
		e = call
	default:
		return nil, p.unexpected(tIdent, t)
	}
	// Accessors.
	for {
		switch p.peek().kind {
		case tDot:
			p.next()
			name := p.next()
			if name.kind != tIdent {
				return nil, p.unexpected(tIdent, name)
			}
			e = &expr{kind: exprMember, str: name.text, x: e, pos: name.pos}
		case tLBrack:
			lb := p.next()
			idx, err := p.expression()
			if err != nil {
				return nil, err
			}
			if rb := p.next(); rb.kind != tRBrack {
				return nil, p.unexpected(tRBrack, rb)
			}
			e = &expr{kind: exprIndex, x: e, index: idx, pos: lb.pos}
		default:
			return e, nil
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// String renders an expression back to ARM syntax (used in messages).
func (e *expr) String() string {
	switch e.kind {
	case exprString:
		return "'" + strings.ReplaceAll(e.str, "'", "''") + "'"
	case exprInt:
		return strconv.FormatInt(e.num, 10)
	case exprFloat:
		return strconv.FormatFloat(e.fnum, 'f', -1, 64)
	case exprCall:
		parts := make([]string, len(e.args))
		for i, a := range e.args {
			parts[i] = a.String()
		}
		return e.str + "(" + strings.Join(parts, ", ") + ")"
	case exprMember:
		return e.x.String() + "." + e.str
	case exprIndex:
		return e.x.String() + "[" + e.index.String() + "]"
	}
	return fmt.Sprintf("<expr %d>", e.kind)
}

// walk calls f for e and every sub-expression.
func (e *expr) walk(f func(*expr)) {
	if e == nil {
		return
	}
	f(e)
	for _, a := range e.args {
		a.walk(f)
	}
	e.x.walk(f)
	e.index.walk(f)
}
