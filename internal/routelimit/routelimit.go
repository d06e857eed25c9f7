// Package routelimit decides the route limit routekeeper keeps a route
// table to, and says where it came from. The number is Azure's: the limit
// of routes per route table that Microsoft.Network's usages API lists for
// the table's region (RoutesPerRouteTable), read at start and at each
// resync (observe.Scope.Usage), or named by ARM when it refused a write
// for too many routes. routeTable.routeLimit may only lower it. When
// Azure's cannot be read (no permission, another cloud), routekeeper keeps
// to Azure's default, 1,000 routes per table since May 2026, and says why
// and what would let it read.
//
// It is pure: the controller hands it what the observer read and what the
// configuration says, and passes the Limit to the verdict
// (verdict.Desired's Limit and LimitFrom), the log, doctor and metrics.
package routelimit

import (
	"fmt"
	"strconv"

	"github.com/routekeeper/routekeeper/internal/observe"
)

// Default is Azure's default limit of routes per route table: 1,000 since
// Azure update 562695 (May 2026; the limits page, "User-defined routes per
// route table"). It was 400 before, which is still what AKS documents as
// its cap of kubenet nodes: that is AKS's limit, not the table's.
const Default = 1000

// Source says where the limit in force came from; it is the source label
// of the routekeeper_route_limit metric.
type Source string

const (
	// Azure: Azure's limit for the table's region, read from the usages
	// API (or named in ARM's refusal of a write).
	Azure Source = "azure"
	// Config: routeTable.routeLimit, lower than Azure's.
	Config Source = "config"
	// DefaultSource: Azure's default; Azure's own could not be read.
	DefaultSource Source = "default"
)

// Known is what routekeeper knows of Azure's limit in the table's region.
type Known struct {
	// Routes is Azure's limit of routes per route table; 0 when unknown.
	Routes int
	// Location is the region it holds in.
	Location string
	// Refusal: Routes was named by ARM's refusal of a write for too many
	// routes, not read from the usages API.
	Refusal bool
	// Tables and TablesUsed are the route tables the subscription may
	// hold in the region and holds (0 when unknown).
	Tables, TablesUsed int
	// Note says why Routes is unknown, and what would let routekeeper
	// read it; "" when it is known.
	Note string
}

// FromUsage is what an observation's read of the usages says.
func FromUsage(u observe.UsageRead) Known {
	k := Known{Routes: u.Routes, Location: u.Location, Tables: u.Tables, TablesUsed: u.TablesUsed}
	switch {
	case u.Unsupported:
		k.Note = "the cloud has no usages API"
	case u.Refused != nil:
		sub := u.Subscription
		if sub == "" {
			sub = "the subscription"
		}
		k.Note = fmt.Sprintf("routekeeper may not read the usages API (%s): grant %s on subscription %s to let it read Azure's limit", u.Refused.Code, observe.UsagesAction, sub)
	case u.Err != nil:
		k.Note = fmt.Sprintf("the usages API could not be read: %v", u.Err)
	}
	if k.Note != "" {
		k.Routes = 0
	}
	return k
}

// Limit is the route limit in force and where it came from.
type Limit struct {
	// Value is the most routes the table may hold, custom routes included.
	Value  int
	Source Source
	// Azure is what is known of Azure's limit; Configured is
	// routeTable.routeLimit (0: not set).
	Azure      Known
	Configured int
}

// Effective is the limit in force: Azure's (known, else its default),
// lowered by a configured limit below it. A configured limit above Azure's
// is not kept: Azure would refuse the table.
func Effective(configured int, azure Known) Limit {
	l := Limit{Value: azure.Routes, Source: Azure, Azure: azure, Configured: max(configured, 0)}
	if l.Value <= 0 {
		l.Value, l.Source = Default, DefaultSource
	}
	if configured > 0 && configured < l.Value {
		l.Value, l.Source = configured, Config
	}
	return l
}

// Azure's limit, as a phrase: "Azure's limit in westeurope (usages API)".
func (l Limit) azure() string {
	where := ""
	if l.Azure.Location != "" {
		where = " in " + l.Azure.Location
	}
	switch {
	case l.Azure.Routes > 0 && l.Azure.Refusal:
		return fmt.Sprintf("Azure's limit%s of %s routes per route table, named in its refusal of a write", where, thousands(l.Azure.Routes))
	case l.Azure.Routes > 0:
		return fmt.Sprintf("Azure's limit%s of %s routes per route table, read from the usages API", where, thousands(l.Azure.Routes))
	}
	return fmt.Sprintf("Azure's default of %s routes per route table (%s)", thousands(Default), l.Azure.Note)
}

// From says, for messages, where the limit came from: "Azure's limit in
// westeurope of 1,000 routes per route table, read from the usages API",
// or "routeTable.routeLimit, below Azure's ...".
func (l Limit) From() string {
	if l.Source == Config {
		return "routeTable.routeLimit, below " + l.azure()
	}
	return l.azure()
}

// Ignored says, when routeTable.routeLimit is set above Azure's limit,
// that it is not kept; "" otherwise.
func (l Limit) Ignored() string {
	if l.Configured > l.Value && l.Source != Config {
		return fmt.Sprintf("routeTable.routeLimit %s is above %s: routekeeper keeps to Azure's, which would refuse a fuller table", thousands(l.Configured), l.azure())
	}
	return ""
}

// thousands formats n with thousands separators, as Azure's pages do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
