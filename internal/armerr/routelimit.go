package armerr

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrRouteTableFull: ARM refused a route table write because the table
// would hold more routes than Azure allows (someone lowered the limit, or
// the limit routekeeper planned with was not the subscription's).
var ErrRouteTableFull = errors.New("route table full: more routes than Azure allows")

// RouteLimitError is ARM's refusal of a route table write for too many
// routes, with the limit its message names.
type RouteLimitError struct {
	// Limit is the routes per route table Azure's answer named; 0 when it
	// named none.
	Limit int
	// Code and Message are ARM's.
	Code, Message string
	// Err is the refusal as the back-end reports it.
	Err error
}

func (e *RouteLimitError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("Azure refused the route table: more than its limit of %d routes per route table (%s): %v", e.Limit, e.Code, e.Err)
	}
	return fmt.Sprintf("Azure refused the route table: more routes than it allows (%s): %v", e.Code, e.Err)
}

func (e *RouteLimitError) Is(target error) bool { return target == ErrRouteTableFull }
func (e *RouteLimitError) Unwrap() error        { return e.Err }

// routeLimitNumber finds the limit in a refusal's message: "the limit of
// 1000 routes", "more than 400 routes", "maximum of 1,000 routes".
var routeLimitNumber = regexp.MustCompile(`(?i)(?:limit of|more than|maximum of|at most|up to)\s+([0-9][0-9,]*)\s+(?:user[- ]defined\s+)?routes`)

// RouteLimitOf reports whether ARM's 400 answer (code, message) refuses a
// route table for holding too many routes, and the limit it names (0:
// none). ARM's code for this is not in public material (its limits page
// gives the number only), so any code that speaks of a route limit or
// quota is taken, and the local fabric's RouteTableRouteLimitExceeded.
func RouteLimitOf(code, message string) (limit int, ok bool) {
	c, m := strings.ToLower(code), strings.ToLower(message)
	route := strings.Contains(c, "route") || strings.Contains(m, "routes per route table")
	limitish := strings.Contains(c, "limit") || strings.Contains(c, "quota") || strings.Contains(c, "toomany") || strings.Contains(c, "maximum")
	// RouteTableCountLimitReached is the subscription's count of tables,
	// not the routes of one.
	if !route || !limitish || strings.Contains(c, "routetablecount") {
		return 0, false
	}
	if sm := routeLimitNumber.FindStringSubmatch(message); sm != nil {
		n, err := strconv.Atoi(strings.ReplaceAll(sm[1], ",", ""))
		if err == nil {
			return n, true
		}
	}
	return 0, true
}
