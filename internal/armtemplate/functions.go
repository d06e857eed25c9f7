package armtemplate

import (
	"fmt"
	"strings"
)

// function is one template function: its arity (max -1 for unbounded)
// and its implementation over evaluated arguments.
type function struct {
	min, max int
	f        func(ev *evaluator, name string, args []any) (any, error)
}

// functions is the table of template functions by lower-case name. It is
// built once at init from the per-concern tables and only read after (an
// initializer expression would be an initialization cycle: functions call
// back into the evaluator that reads the table).
var functions map[string]function

func init() {
	functions = map[string]function{}
	for _, table := range []map[string]function{stringFunctions, arrayFunctions, logicFunctions, deploymentFunctions} {
		for k, v := range table {
			functions[strings.ToLower(k)] = v
		}
	}
}

func fixed(n int, f func(ev *evaluator, name string, args []any) (any, error)) function {
	return function{n, n, f}
}

func arityError(name string, min, max, got int) error {
	switch {
	case min == max:
		return invalidf("Unable to evaluate template language function '%s': function requires %d argument(s) while %d were provided. %s", name, min, got, exprDocs)
	case max < 0:
		return invalidf("Unable to evaluate template language function '%s': function requires at least %d argument(s) while %d were provided. %s", name, min, got, exprDocs)
	}
	return invalidf("Unable to evaluate template language function '%s': function requires between %d and %d argument(s) while %d were provided. %s", name, min, max, got, exprDocs)
}

func typeError(name string, which string, want string, got any) error {
	return invalidf("The template language function '%s' expects its %s to be of type '%s'. The provided value is of type '%s'. %s", name, which, want, typeName(got), exprDocs)
}

func ordinal(i int) string {
	switch i {
	case 0:
		return "first parameter"
	case 1:
		return "second parameter"
	case 2:
		return "third parameter"
	}
	return fmt.Sprintf("parameter %d", i+1)
}

func argString(name string, args []any, i int) (string, error) {
	s, ok := args[i].(string)
	if !ok {
		return "", typeError(name, ordinal(i), "String", args[i])
	}
	return s, nil
}

func argInt(name string, args []any, i int) (int64, error) {
	switch n := args[i].(type) {
	case int64:
		return n, nil
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	}
	return 0, typeError(name, ordinal(i), "Integer", args[i])
}

func argStrings(name string, args []any) ([]string, error) {
	out := make([]string, len(args))
	for i := range args {
		s, ok := args[i].(string)
		if !ok {
			return nil, invalidf("The template language function '%s' expects its parameters to be of type 'String'. The parameter %d is of type '%s'. %s", name, i+1, typeName(args[i]), exprDocs)
		}
		out[i] = s
	}
	return out, nil
}
