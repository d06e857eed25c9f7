package deployments

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armtemplate"
	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// request is a deployment request's body (PUT, validate, whatIf):
// {"properties": {"template", "parameters", "mode", ...}, "tags", "location"}.
type request struct {
	tmpl *armtemplate.Template
	// template is the template object as sent, for the hash and
	// exportTemplate.
	template any
	params   map[string]any
	mode     string
	tags     any
	// resultFormat is a what-if's whatIfSettings.resultFormat
	// (FullResourcePayloads or ResourceIdOnly).
	resultFormat string
	// evaluation is expressionEvaluationOptions.scope; only the default
	// (outer) exists at the top level.
}

// Deployment modes.
const (
	modeIncremental = "Incremental"
	modeComplete    = "Complete"
)

// parseRequest reads a deployment request. The body may be JSONC as az
// sends it (comments, `template:` unquoted); template errors keep their
// line and column in the body.
func parseRequest(body []byte) (*request, error) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, api.InvalidContent(errors.New("the request body is empty"))
	}
	tmpl, doc, err := armtemplate.ParseMember(body, "properties", "template")
	if doc == nil {
		var te *armtemplate.Error
		if errors.As(err, &te) {
			return nil, api.InvalidContent(errors.New(te.Message))
		}
		return nil, api.InvalidContent(err)
	}
	props, ok := field(doc, "properties").(map[string]any)
	if !ok {
		return nil, api.InvalidContent(errors.New("the required property 'properties' is missing or not an object"))
	}
	if err != nil {
		return nil, err // the template's own error (InvalidTemplate)
	}
	r := &request{tmpl: tmpl, template: field(props, "template"), tags: field(doc, "tags")}
	if tmpl == nil {
		if link := field(props, "templateLink"); link != nil {
			return nil, api.BadRequest("InvalidContentLink",
				"Unable to download deployment content from '%s': the routekeeper fabric has no network; send the template inline (az deployment group create --template-file).", linkURI(link))
		}
		return nil, api.BadRequest("InvalidDeployment", "The deployment must have either 'template' or 'templateLink' in its properties.")
	}
	if link := field(props, "parametersLink"); link != nil {
		return nil, api.BadRequest("InvalidContentLink",
			"Unable to download deployment parameters from '%s': the routekeeper fabric has no network; send the parameters inline.", linkURI(link))
	}
	if field(props, "onErrorDeployment") != nil {
		return nil, api.BadRequest("InvalidOnErrorDeployment",
			"The routekeeper fabric does not redeploy on error (onErrorDeployment): deploy again by hand.")
	}
	switch p := field(props, "parameters").(type) {
	case nil:
		r.params = map[string]any{}
	case map[string]any:
		r.params = p
	default:
		return nil, api.InvalidContent(errors.New("'properties.parameters' must be an object of {\"name\": {\"value\": ...}}"))
	}
	mode, _ := field(props, "mode").(string)
	switch {
	case strings.EqualFold(mode, modeIncremental):
		r.mode = modeIncremental
	case strings.EqualFold(mode, modeComplete):
		r.mode = modeComplete
	case mode == "":
		return nil, api.InvalidContent(errors.New("required property 'mode' not found in JSON (properties.mode: Incremental or Complete)"))
	default:
		return nil, api.BadRequest("InvalidDeploymentMode", "The deployment mode '%s' is not valid; it must be 'Incremental' or 'Complete'.", mode)
	}
	if s, ok := field(props, "whatIfSettings").(map[string]any); ok {
		r.resultFormat, _ = field(s, "resultFormat").(string)
	}
	return r, nil
}

func linkURI(link any) string {
	if s, ok := link.(string); ok {
		return s
	}
	if m, ok := link.(map[string]any); ok {
		if u, ok := field(m, "uri").(string); ok {
			return u
		}
		if id, ok := field(m, "id").(string); ok {
			return id
		}
	}
	return "the link"
}

// field reads a member without regard to case, as ARM does.
func field(m map[string]any, name string) any {
	if v, ok := m[name]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// canonical is v as compact JSON with sorted keys (encoding/json sorts
// map keys).
func canonical(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
