package armtemplate

import (
	"math"
	"strconv"
	"strings"
)

// fnFormat is format(): .NET composite formatting, "{index[,alignment]
// [:formatString]}" with "{{" and "}}" as literal braces. Numeric format
// strings N, D, F and X (with precision) are implemented; any other format
// string is an error rather than a guess.
func fnFormat(_ *evaluator, name string, args []any) (any, error) {
	f, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	vals := args[1:]
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '{' && i+1 < len(f) && f[i+1] == '{':
			b.WriteByte('{')
			i++
		case c == '}' && i+1 < len(f) && f[i+1] == '}':
			b.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				return nil, formatError()
			}
			item := f[i+1 : i+end]
			i += end
			s, err := formatItem(item, vals)
			if err != nil {
				return nil, err
			}
			b.WriteString(s)
		case c == '}':
			return nil, formatError()
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func formatError() error {
	return invalidf("Unable to evaluate template language function 'format': the format string is not valid: Input string was not in a correct format. %s", exprDocs)
}

func formatItem(item string, vals []any) (string, error) {
	spec := ""
	if k := strings.IndexByte(item, ':'); k >= 0 {
		item, spec = item[:k], item[k+1:]
	}
	align := 0
	if k := strings.IndexByte(item, ','); k >= 0 {
		a, err := strconv.Atoi(strings.TrimSpace(item[k+1:]))
		if err != nil || a > maxPadLength || a < -maxPadLength {
			return "", formatError()
		}
		item, align = item[:k], a
	}
	idx, err := strconv.Atoi(strings.TrimSpace(item))
	if err != nil || idx < 0 {
		return "", formatError()
	}
	if idx >= len(vals) {
		return "", invalidf("Unable to evaluate template language function 'format': Index (zero based) must be greater than or equal to zero and less than the size of the argument list. %s", exprDocs)
	}
	s, err := formatValue(vals[idx], spec)
	if err != nil {
		return "", err
	}
	if n := len([]rune(s)); align > n {
		s = strings.Repeat(" ", align-n) + s
	} else if -align > n {
		s += strings.Repeat(" ", -align-n)
	}
	return s, nil
}

func formatValue(v any, spec string) (string, error) {
	var f float64
	isInt := false
	var n int64
	switch x := v.(type) {
	case int64:
		n, f, isInt = x, float64(x), true
	case float64:
		f = x
	default:
		return stringOf(v), nil // .NET ignores numeric format strings for non-numbers
	}
	if spec == "" {
		return stringOf(v), nil
	}
	kind := spec[0]
	prec := -1
	if len(spec) > 1 {
		p, err := strconv.Atoi(spec[1:])
		if err != nil || p < 0 || p > 99 {
			return "", formatError()
		}
		prec = p
	}
	switch kind {
	case 'N', 'n':
		if prec < 0 {
			prec = 2
		}
		return groupThousands(strconv.FormatFloat(roundHalfAway(f, prec), 'f', prec, 64)), nil
	case 'F', 'f':
		if prec < 0 {
			prec = 2
		}
		return strconv.FormatFloat(roundHalfAway(f, prec), 'f', prec, 64), nil
	case 'D', 'd':
		if !isInt {
			return "", formatError()
		}
		neg := n < 0
		s := strconv.FormatUint(absU(n), 10)
		if len(s) < prec {
			s = strings.Repeat("0", prec-len(s)) + s
		}
		if neg {
			s = "-" + s
		}
		return s, nil
	case 'X', 'x':
		if !isInt {
			return "", formatError()
		}
		s := strconv.FormatUint(uint64(n), 16)
		if kind == 'X' {
			s = strings.ToUpper(s)
		}
		if len(s) < prec {
			s = strings.Repeat("0", prec-len(s)) + s
		}
		return s, nil
	}
	return "", invalidf("Unable to evaluate template language function 'format': the format string '%s' is not supported by this engine. %s", spec, exprDocs)
}

func absU(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1
	}
	return uint64(n)
}

func roundHalfAway(f float64, prec int) float64 {
	p := math.Pow(10, float64(prec))
	return math.Round(f*p) / p
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac := s, ""
	if k := strings.IndexByte(s, '.'); k >= 0 {
		intPart, frac = s[:k], s[k:]
	}
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String() + frac
	if neg {
		out = "-" + out
	}
	return out
}
