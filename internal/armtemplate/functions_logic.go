package armtemplate

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

var logicFunctions = map[string]function{
	"equals":          fixed(2, func(_ *evaluator, _ string, a []any) (any, error) { return deepEqual(a[0], a[1]), nil }),
	"not":             fixed(1, fnNot),
	"and":             {2, -1, fnAndOr(true)},
	"or":              {2, -1, fnAndOr(false)},
	"bool":            fixed(1, fnBool),
	"true":            fixed(0, func(*evaluator, string, []any) (any, error) { return true, nil }),
	"false":           fixed(0, func(*evaluator, string, []any) (any, error) { return false, nil }),
	"less":            fixed(2, fnCompare(func(c int) bool { return c < 0 })),
	"lessOrEquals":    fixed(2, fnCompare(func(c int) bool { return c <= 0 })),
	"greater":         fixed(2, fnCompare(func(c int) bool { return c > 0 })),
	"greaterOrEquals": fixed(2, fnCompare(func(c int) bool { return c >= 0 })),
	"add":             fixed(2, fnArith),
	"sub":             fixed(2, fnArith),
	"mul":             fixed(2, fnArith),
	"div":             fixed(2, fnArith),
	"mod":             fixed(2, fnArith),
	"int":             fixed(1, fnInt),
	"float":           fixed(1, fnFloat),
}

func fnNot(_ *evaluator, name string, args []any) (any, error) {
	b, ok := args[0].(bool)
	if !ok {
		return nil, typeError(name, "first parameter", "Boolean", args[0])
	}
	return !b, nil
}

func fnAndOr(isAnd bool) func(*evaluator, string, []any) (any, error) {
	return func(_ *evaluator, name string, args []any) (any, error) {
		result := isAnd
		for i, a := range args {
			b, ok := a.(bool)
			if !ok {
				return nil, typeError(name, ordinal(i), "Boolean", a)
			}
			if isAnd {
				result = result && b
			} else {
				result = result || b
			}
		}
		return result, nil
	}
}

func fnBool(_ *evaluator, name string, args []any) (any, error) {
	switch v := args[0].(type) {
	case bool:
		return v, nil
	case int64:
		return v != 0, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, invalidf("The template language function 'bool' expects its parameter to be 'true' or 'false'; it is '%s'. %s", v, exprDocs)
	}
	return nil, typeError(name, "first parameter", "String, Integer or Boolean", args[0])
}

// compareStrings orders strings as .NET's culture-aware comparison does
// for the cases templates meet: ignoring case first, then, at the first
// difference of case, lower case before upper case. The reference documents
// greater('A', 'a') as true, which an ordinal comparison would get wrong.
func compareStrings(a, b string) int {
	if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
		return c
	}
	ra, rb := []rune(a), []rune(b)
	for i := range ra {
		if ra[i] != rb[i] {
			if unicode.IsLower(ra[i]) {
				return -1
			}
			return 1
		}
	}
	return 0
}

func fnCompare(ok func(int) bool) func(*evaluator, string, []any) (any, error) {
	return func(_ *evaluator, name string, args []any) (any, error) {
		switch a := args[0].(type) {
		case string:
			b, isStr := args[1].(string)
			if !isStr {
				return nil, typeError(name, "second parameter", "String", args[1])
			}
			return ok(compareStrings(a, b)), nil
		case int64, float64:
			switch args[1].(type) {
			case int64, float64:
			default:
				return nil, typeError(name, "second parameter", "Integer", args[1])
			}
			x, y := asFloat(args[0]), asFloat(args[1])
			if ai, isInt := a.(int64); isInt {
				if bi, isInt := args[1].(int64); isInt { // exact for large ints
					switch {
					case ai < bi:
						return ok(-1), nil
					case ai > bi:
						return ok(1), nil
					}
					return ok(0), nil
				}
			}
			switch {
			case x < y:
				return ok(-1), nil
			case x > y:
				return ok(1), nil
			}
			return ok(0), nil
		}
		return nil, typeError(name, "first parameter", "Integer or String", args[0])
	}
}

func fnArith(_ *evaluator, name string, args []any) (any, error) {
	a, err := argInt(name, args, 0)
	if err != nil {
		return nil, err
	}
	b, err := argInt(name, args, 1)
	if err != nil {
		return nil, err
	}
	overflow := func() (any, error) {
		return nil, invalidf("The template language function '%s' overflowed the range of a 64-bit integer. %s", name, exprDocs)
	}
	switch strings.ToLower(name) {
	case "add":
		r := a + b
		if (r > a) != (b > 0) {
			return overflow()
		}
		return r, nil
	case "sub":
		r := a - b
		if (r < a) != (b > 0) {
			return overflow()
		}
		return r, nil
	case "mul":
		if a != 0 && b != 0 {
			r := a * b
			if r/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
				return overflow()
			}
			return r, nil
		}
		return int64(0), nil
	case "div", "mod":
		if b == 0 {
			return nil, invalidf("The template language function '%s' expects its second parameter to be a non-zero integer. %s", name, exprDocs)
		}
		if a == math.MinInt64 && b == -1 {
			if strings.EqualFold(name, "mod") {
				return int64(0), nil
			}
			return overflow()
		}
		if strings.EqualFold(name, "div") {
			return a / b, nil
		}
		return a % b, nil
	}
	return nil, invalidf("The template function '%s' is not valid. %s", name, exprDocs)
}

func fnInt(_ *evaluator, name string, args []any) (any, error) {
	switch v := args[0].(type) {
	case int64:
		return v, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return int64(v), nil
		}
		return nil, invalidf("The template language function 'int' cannot convert the non-integral value '%v' to an integer. %s", v, exprDocs)
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, invalidf("The template language function 'int' expects its parameter to be an integer or a string that can be converted to an integer; '%s' cannot. %s", v, exprDocs)
		}
		return n, nil
	}
	return nil, typeError(name, "first parameter", "String or Integer", args[0])
}

func fnFloat(_ *evaluator, name string, args []any) (any, error) {
	switch v := args[0].(type) {
	case int64:
		return float64(v), nil
	case float64:
		return v, nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, invalidf("The template language function 'float' expects a number or a string that can be converted to one; '%s' cannot. %s", v, exprDocs)
		}
		return f, nil
	}
	return nil, typeError(name, "first parameter", "String or Integer", args[0])
}
