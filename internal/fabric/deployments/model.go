package deployments

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/routekeeper/routekeeper/internal/armtemplate"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Provisioning states of a deployment and of its operations.
const (
	stateAccepted  = "Accepted"
	stateRunning   = "Running"
	stateSucceeded = "Succeeded"
	stateFailed    = "Failed"
	stateCanceled  = "Canceled"
)

// deployment is a deployment as GET answers it (DeploymentExtended).
type deployment struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	Tags       any        `json:"tags,omitempty"`
	Properties properties `json:"properties"`
}

type properties struct {
	TemplateHash       string                        `json:"templateHash,omitempty"`
	Parameters         map[string]armtemplate.Output `json:"parameters,omitempty"`
	Mode               string                        `json:"mode"`
	ProvisioningState  string                        `json:"provisioningState"`
	Timestamp          string                        `json:"timestamp"`
	Duration           string                        `json:"duration"`
	CorrelationID      string                        `json:"correlationId"`
	Providers          []providerTypes               `json:"providers"`
	Dependencies       []dependency                  `json:"dependencies"`
	Outputs            map[string]armtemplate.Output `json:"outputs,omitempty"`
	OutputResources    []resourceRef                 `json:"outputResources,omitempty"`
	ValidatedResources []resourceRef                 `json:"validatedResources,omitempty"`
	Error              *armError                     `json:"error,omitempty"`

	// started is when the deployment started (timestamp and duration
	// are made of it); not served.
	Started int64 `json:"-"`
}

type providerTypes struct {
	Namespace     string         `json:"namespace"`
	ResourceTypes []resourceType `json:"resourceTypes"`
}

type resourceType struct {
	ResourceType string   `json:"resourceType"`
	Locations    []string `json:"locations,omitempty"`
}

type dependency struct {
	DependsOn    []basicDependency `json:"dependsOn"`
	ID           string            `json:"id"`
	ResourceType string            `json:"resourceType"`
	ResourceName string            `json:"resourceName"`
}

type basicDependency struct {
	ID           string `json:"id"`
	ResourceType string `json:"resourceType"`
	ResourceName string `json:"resourceName"`
}

type resourceRef struct {
	ID string `json:"id"`
}

// armError is an ARM error (ErrorResponse), with the target and nested
// details api.Error's body does not carry.
type armError struct {
	Code           string     `json:"code"`
	Message        string     `json:"message"`
	Target         string     `json:"target,omitempty"`
	Details        []armError `json:"details,omitempty"`
	AdditionalInfo []any      `json:"additionalInfo,omitempty"`
}

func (e *armError) Error() string { return e.Code + ": " + e.Message }

// errorOf makes an ARM error of what a sub-request or the engine failed
// with.
func errorOf(err error, target string) armError {
	switch e := err.(type) {
	case *api.Error:
		out := armError{Code: e.Code, Message: e.Message, Target: e.Target, AdditionalInfo: e.AdditionalInfo}
		for _, d := range e.Details {
			out.Details = append(out.Details, armError{Code: d.Code, Message: d.Message})
		}
		if out.Target == "" {
			out.Target = target
		}
		return out
	case *armError:
		return *e
	case *armtemplate.Error:
		return templateError(e)
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return errorOf(ae, target)
	}
	var te *armtemplate.Error
	if errors.As(err, &te) {
		return templateError(te)
	}
	return armError{Code: "InternalServerError", Message: err.Error(), Target: target}
}

// templateError is an engine error as ARM reports it: the code, the
// message and, with a position, the TemplateViolation.
func templateError(e *armtemplate.Error) armError {
	out := armError{Code: e.Code, Message: e.Message}
	if e.Code == armtemplate.CodeInvalidTemplate {
		out.AdditionalInfo = []any{map[string]any{"type": "TemplateViolation",
			"info": map[string]any{"lineNumber": e.Line, "linePosition": e.Column, "path": ""}}}
	}
	return out
}

// deploymentFailed is ARM's error of a deployment one of whose operations
// failed.
func deploymentFailed(details []armError) *armError {
	return &armError{Code: "DeploymentFailed",
		Message: "At least one resource deployment operation failed. Please list deployment operations for details. Please see https://aka.ms/arm-deployment-operations for usage details.",
		Details: details}
}

// isoDuration formats d as ARM does (PT1.2345S, PT1M2.5S).
func isoDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	var b strings.Builder
	b.WriteString("PT")
	if h := int(d / time.Hour); h > 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= time.Duration(h) * time.Hour
	}
	if m := int(d / time.Minute); m > 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= time.Duration(m) * time.Minute
	}
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.7f", d.Seconds()), "0"), ".")
	b.WriteString(s + "S")
	return b.String()
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.0000000Z") }

// templateHash is the deployment's templateHash: a number made of the
// template's canonical JSON.
func templateHash(canonical []byte) string {
	h := fnv.New64a()
	h.Write(canonical)
	return fmt.Sprint(h.Sum64())
}

// providersOf lists the namespaces and types of the steps, with the
// locations they deploy to when known.
func providersOf(steps []*armtemplate.Step, locations map[string]string) []providerTypes {
	byNS := map[string]map[string]map[string]bool{}
	var nss []string
	for _, s := range steps {
		ns, typ, ok := strings.Cut(s.Type, "/")
		if !ok {
			continue
		}
		if byNS[ns] == nil {
			byNS[ns] = map[string]map[string]bool{}
			nss = append(nss, ns)
		}
		if byNS[ns][typ] == nil {
			byNS[ns][typ] = map[string]bool{}
		}
		if l := locations[api.Key(s.ID)]; l != "" {
			byNS[ns][typ][api.NormalizeLocation(l)] = true
		}
	}
	out := []providerTypes{}
	for _, ns := range nss {
		pt := providerTypes{Namespace: ns}
		var types []string
		for t := range byNS[ns] {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			var locs []string
			for l := range byNS[ns][t] {
				locs = append(locs, l)
			}
			sort.Strings(locs)
			pt.ResourceTypes = append(pt.ResourceTypes, resourceType{ResourceType: t, Locations: locs})
		}
		out = append(out, pt)
	}
	return out
}

// dependenciesOf lists each step with its dependencies.
func dependenciesOf(steps []*armtemplate.Step) []dependency {
	byID := map[string]*armtemplate.Step{}
	for _, s := range steps {
		byID[api.Key(s.ID)] = s
	}
	out := []dependency{}
	for _, s := range steps {
		if len(s.DependsOn) == 0 {
			continue
		}
		d := dependency{ID: s.ID, ResourceType: s.Type, ResourceName: s.Name}
		for _, id := range s.DependsOn {
			b := basicDependency{ID: id}
			if o := byID[api.Key(id)]; o != nil {
				b.ResourceType, b.ResourceName = o.Type, o.Name
			}
			d.DependsOn = append(d.DependsOn, b)
		}
		out = append(out, d)
	}
	return out
}
