package armtemplate

import (
	"strings"
)

var deploymentFunctions = map[string]function{
	"parameters":             fixed(1, fnParameters),
	"variables":              fixed(1, fnVariables),
	"copyIndex":              {0, 2, fnCopyIndex},
	"deployment":             fixed(0, fnDeployment),
	"resourceGroup":          fixed(0, fnResourceGroup),
	"subscription":           fixed(0, fnSubscription),
	"tenant":                 fixed(0, fnTenant),
	"environment":            fixed(0, fnEnvironment),
	"resourceId":             {2, -1, fnResourceID},
	"subscriptionResourceId": {2, -1, fnSubscriptionResourceID},
	"tenantResourceId":       {2, -1, fnTenantResourceID},
	"extensionResourceId":    {3, -1, fnExtensionResourceID},
	"reference":              {1, 3, fnReference},
}

func notExpectedHere(name string) error {
	return invalidf("The template function '%s' is not expected at this location. %s", name, exprDocs)
}

func fnParameters(ev *evaluator, name string, args []any) (any, error) {
	p, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	f := ev.f
	if ev.where != "parameter default" {
		f = f.scopeFrame()
	}
	v, err := f.parameter(ev.ctx, p)
	if err != nil {
		return nil, err
	}
	return deepCopy(v), nil
}

func fnVariables(ev *evaluator, name string, args []any) (any, error) {
	if ev.where == "parameter default" {
		return nil, notExpectedHere(name)
	}
	v, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	out, err := ev.f.variable(ev.ctx, v)
	if err != nil {
		return nil, err
	}
	return deepCopy(out), nil
}

func fnCopyIndex(ev *evaluator, name string, args []any) (any, error) {
	loop, offset := "", int64(0)
	switch len(args) {
	case 1:
		switch a := args[0].(type) {
		case string:
			loop = a
		case int64:
			offset = a
		default:
			return nil, typeError(name, "first parameter", "String or Integer", a)
		}
	case 2:
		s, err := argString(name, args, 0)
		if err != nil {
			return nil, err
		}
		if offset, err = argInt(name, args, 1); err != nil {
			return nil, err
		}
		loop = s
	}
	i, ok := ev.copy[strings.ToLower(loop)]
	if !ok {
		if loop != "" {
			return nil, invalidf("The template function 'copyIndex' is not expected at this location. The copy loop '%s' is not found or the function is used outside of it. %s", loop, exprDocs)
		}
		return nil, invalidf("The template function 'copyIndex' is not expected at this location. The function can only be used in a resource with copy specified. %s", exprDocs)
	}
	return int64(i) + offset, nil
}

func fnDeployment(ev *evaluator, _ string, _ []any) (any, error) {
	f := ev.f
	mode := f.scope.Mode
	if mode == "" {
		mode = "Incremental"
	}
	tmpl := map[string]any{}
	for _, k := range []string{"$schema", "contentVersion"} {
		if v, key, ok := lookup(f.t.raw, k); ok {
			tmpl[key] = v
		}
	}
	params := map[string]any{}
	for k, v := range f.given {
		params[k] = map[string]any{"value": v}
	}
	return map[string]any{
		"name": f.scope.DeploymentName,
		"properties": map[string]any{
			"template":          tmpl,
			"parameters":        params,
			"mode":              mode,
			"provisioningState": "Accepted",
		},
	}, nil
}

func fnResourceGroup(ev *evaluator, name string, _ []any) (any, error) {
	s := ev.f.scope
	if s.ResourceGroup == "" {
		return nil, invalidf("The template function 'resourceGroup' is not expected at this location: the deployment is not at resource group scope. %s", exprDocs)
	}
	return map[string]any{
		"id":         "/subscriptions/" + s.SubscriptionID + "/resourceGroups/" + s.ResourceGroup,
		"name":       s.ResourceGroup,
		"type":       "Microsoft.Resources/resourceGroups",
		"location":   s.ResourceGroupLocation,
		"properties": map[string]any{"provisioningState": "Succeeded"},
	}, nil
}

func fnSubscription(ev *evaluator, _ string, _ []any) (any, error) {
	s := ev.f.scope
	return map[string]any{
		"id":             "/subscriptions/" + s.SubscriptionID,
		"subscriptionId": s.SubscriptionID,
		"tenantId":       s.TenantID,
		"displayName":    s.SubscriptionID,
	}, nil
}

func fnTenant(ev *evaluator, _ string, _ []any) (any, error) {
	return map[string]any{"id": "/tenants/" + ev.f.scope.TenantID, "tenantId": ev.f.scope.TenantID}, nil
}

// azureCloud is environment() in Azure's public cloud.
func azureCloud() map[string]any {
	return map[string]any{
		"name":                    "AzureCloud",
		"gallery":                 "https://gallery.azure.com/",
		"graph":                   "https://graph.windows.net/",
		"portal":                  "https://portal.azure.com",
		"graphAudience":           "https://graph.windows.net/",
		"activeDirectoryDataLake": "https://datalake.azure.net/",
		"batch":                   "https://batch.core.windows.net/",
		"media":                   "https://rest.media.azure.net",
		"sqlManagement":           "https://management.core.windows.net:8443/",
		"vmImageAliasDoc":         "https://raw.githubusercontent.com/Azure/azure-rest-api-specs/master/arm-compute/quickstart-templates/aliases.json",
		"resourceManager":         "https://management.azure.com/",
		"authentication": map[string]any{
			"loginEndpoint":    "https://login.microsoftonline.com/",
			"audiences":        []any{"https://management.core.windows.net/", "https://management.azure.com/"},
			"tenant":           "common",
			"identityProvider": "AAD",
		},
		"suffixes": map[string]any{
			"acrLoginServer":                      ".azurecr.io",
			"azureDatalakeAnalyticsCatalogAndJob": "azuredatalakeanalytics.net",
			"azureDatalakeStoreFileSystem":        "azuredatalakestore.net",
			"azureFrontDoorEndpointSuffix":        "azurefd.net",
			"keyvaultDns":                         ".vault.azure.net",
			"sqlServerHostname":                   ".database.windows.net",
			"storage":                             "core.windows.net",
		},
	}
}

func fnEnvironment(ev *evaluator, _ string, _ []any) (any, error) {
	if ev.f.opts.Environment != nil {
		return deepCopy(normalize(ev.f.opts.Environment)), nil
	}
	return azureCloud(), nil
}

// splitTypeArgs finds the resource type among resourceId-style arguments:
// the first argument with a '/' in it. What precedes it are scope
// arguments; what follows, the names, one per type segment after the
// namespace.
func splitTypeArgs(name string, ss []string) (pre []string, typ string, names []string, err error) {
	t := -1
	for i, s := range ss {
		if strings.Contains(s, "/") {
			t = i
			break
		}
	}
	if t < 0 {
		return nil, "", nil, invalidf("Unable to evaluate template language function '%s': the resource type is missing; it must be a fully qualified type such as 'Microsoft.Network/virtualNetworks'. %s", name, exprDocs)
	}
	typ = ss[t]
	for _, n := range ss[t+1:] {
		names = append(names, strings.Split(n, "/")...)
	}
	if want := len(strings.Split(typ, "/")) - 1; want != len(names) || want == 0 {
		return nil, "", nil, invalidf("Unable to evaluate template language function '%s': the type '%s' requires '%d' resource name argument(s). %s", name, typ, want, exprDocs)
	}
	return ss[:t], typ, names, nil
}

func fnResourceID(ev *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	pre, typ, names, err := splitTypeArgs(name, ss)
	if err != nil {
		return nil, err
	}
	sub, rg := ev.f.scope.SubscriptionID, ev.f.scope.ResourceGroup
	switch len(pre) {
	case 0:
	case 1:
		rg = pre[0]
	case 2:
		sub, rg = pre[0], pre[1]
	default:
		return nil, invalidf("Unable to evaluate template language function '%s': too many arguments before the resource type '%s'. %s", name, typ, exprDocs)
	}
	return ev.f.resourceID(sub, rg, typ, names), nil
}

func fnSubscriptionResourceID(ev *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	pre, typ, names, err := splitTypeArgs(name, ss)
	if err != nil {
		return nil, err
	}
	sub := ev.f.scope.SubscriptionID
	switch len(pre) {
	case 0:
	case 1:
		sub = pre[0]
	default:
		return nil, invalidf("Unable to evaluate template language function '%s': too many arguments before the resource type '%s'. %s", name, typ, exprDocs)
	}
	return ev.f.resourceID(sub, "", typ, names), nil
}

func fnTenantResourceID(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	pre, typ, names, err := splitTypeArgs(name, ss)
	if err != nil {
		return nil, err
	}
	if len(pre) > 0 {
		return nil, invalidf("Unable to evaluate template language function '%s': too many arguments before the resource type '%s'. %s", name, typ, exprDocs)
	}
	return typeNamePath(typ, names), nil
}

func fnExtensionResourceID(_ *evaluator, name string, args []any) (any, error) {
	ss, err := argStrings(name, args)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(ss[0], "/") {
		return nil, invalidf("Unable to evaluate template language function '%s': the first parameter must be a resource ID; '%s' is not. %s", name, ss[0], exprDocs)
	}
	pre, typ, names, err := splitTypeArgs(name, ss[1:])
	if err != nil {
		return nil, err
	}
	if len(pre) > 0 {
		return nil, invalidf("Unable to evaluate template language function '%s': unexpected arguments before the resource type '%s'. %s", name, typ, exprDocs)
	}
	return extensionID(ss[0], typ, names), nil
}

func fnNewGUID(ev *evaluator, name string, _ []any) (any, error) {
	if ev.where != "parameter default" {
		return nil, invalidf("The template function '%s' is not expected at this location. It can only be used in the default value of a parameter. %s", name, exprDocs)
	}
	return ev.f.newGUID(), nil
}

func fnUTCNow(ev *evaluator, name string, args []any) (any, error) {
	if ev.where != "parameter default" {
		return nil, invalidf("The template function '%s' is not expected at this location. It can only be used in the default value of a parameter. %s", name, exprDocs)
	}
	now := ev.f.now().UTC()
	if len(args) == 0 {
		return now.Format("20060102T150405Z"), nil
	}
	f, err := argString(name, args, 0)
	if err != nil {
		return nil, err
	}
	layout, ok := dotnetLayouts[f]
	if !ok {
		return nil, invalidf("The template language function 'utcNow' format '%s' is not supported by this engine. %s", f, exprDocs)
	}
	return now.Format(layout), nil
}

// dotnetLayouts maps the .NET date formats utcNow() is commonly given to Go
// layouts.
var dotnetLayouts = map[string]string{
	"u": "2006-01-02 15:04:05Z", "d": "1/2/2006", "yyyyMMdd": "20060102", "yyyy-MM-dd": "2006-01-02",
	"yyyyMMddHHmmss": "20060102150405", "o": "2006-01-02T15:04:05.0000000Z", "s": "2006-01-02T15:04:05",
	"yyyy": "2006", "HHmmss": "150405",
}
