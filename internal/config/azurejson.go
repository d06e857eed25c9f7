package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// AzureJSON is the part of cloud-provider-azure's configuration file
// (azure.json, usually /etc/kubernetes/azure.json) that routekeeper uses.
// Keys are matched as cloud-provider-azure matches them: the file may be
// JSON or YAML, key case does not matter, and other keys are ignored.
type AzureJSON struct {
	// Path is the file the configuration was read from.
	Path string `json:"-"`

	Cloud                       string `json:"cloud,omitempty"`
	TenantID                    string `json:"tenantId,omitempty"`
	SubscriptionID              string `json:"subscriptionId,omitempty"`
	AADClientID                 string `json:"aadClientId,omitempty"`
	AADClientSecret             Secret `json:"aadClientSecret,omitempty"`
	UseManagedIdentityExtension bool   `json:"useManagedIdentityExtension,omitempty"`
	UserAssignedIdentityID      string `json:"userAssignedIdentityID,omitempty"`
	ResourceGroup               string `json:"resourceGroup,omitempty"`
	Location                    string `json:"location,omitempty"`
	VnetName                    string `json:"vnetName,omitempty"`
	VnetResourceGroup           string `json:"vnetResourceGroup,omitempty"`
	SubnetName                  string `json:"subnetName,omitempty"`
	RouteTableName              string `json:"routeTableName,omitempty"`
	RouteTableResourceGroup     string `json:"routeTableResourceGroup,omitempty"`
}

// String describes the file without its secret.
func (a *AzureJSON) String() string {
	if a == nil {
		return "<nil>"
	}
	return fmt.Sprintf("azure.json %s (subscription %s, resource group %s, route table %s)", a.Path, a.SubscriptionID, a.ResourceGroup, a.RouteTableName)
}

// LoadAzureJSON reads a cloud-provider-azure azure.json.
func LoadAzureJSON(path string) (*AzureJSON, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("azure.json %s does not exist", path)
		}
		return nil, fmt.Errorf("reading azure.json: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a byte order mark from Windows editors
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("azure.json %s is empty", path)
	}
	var a AzureJSON
	if err := yaml.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%s: not a valid azure.json: %s", path, cleanYAMLError(err))
	}
	a.Path = path
	return &a, nil
}

// mergeAzureJSON fills the settings that are empty from azure.json, and
// derives the route table and subnet IDs from its names. An empty value
// counts as not given (a dump writes every setting, most of them empty);
// useManagedIdentity: false counts as given.
func (c *Config) mergeAzureJSON(aj *AzureJSON) {
	c.AzureJSON = aj
	from := func(path, via string) {
		c.origins[path] = origin{where: aj.Path, via: via, file: true}
	}
	str := func(path string, p *string, v, via string) {
		if v != "" && *p == "" {
			*p = v
			from(path, via)
		}
	}
	az := &c.Cloud.Azure
	str("cloud.azure.subscriptionID", &az.SubscriptionID, aj.SubscriptionID, "subscriptionId")
	str("cloud.azure.tenantID", &az.TenantID, aj.TenantID, "tenantId")
	str("cloud.azure.clientID", &az.ClientID, aj.AADClientID, "aadClientId")
	if aj.AADClientSecret != "" && az.ClientSecret == "" && az.ClientSecretFile == "" {
		az.ClientSecret = aj.AADClientSecret
		from("cloud.azure.clientSecret", "aadClientSecret")
	}
	if aj.UseManagedIdentityExtension && !c.isSet("cloud.azure.useManagedIdentity") {
		az.UseManagedIdentity = true
		from("cloud.azure.useManagedIdentity", "useManagedIdentityExtension")
	}
	str("cloud.azure.userAssignedIdentityID", &az.UserAssignedIdentityID, aj.UserAssignedIdentityID, "userAssignedIdentityID")
	str("cloud.azure.cloud", &az.Cloud, aj.Cloud, "cloud")
	str("routeTable.location", &c.RouteTable.Location, aj.Location, "location")

	sub := az.SubscriptionID
	if c.RouteTable.ID == "" && aj.RouteTableName != "" && sub != "" {
		rg, rgKey := aj.RouteTableResourceGroup, "routeTableResourceGroup"
		if rg == "" {
			rg, rgKey = aj.ResourceGroup, "resourceGroup"
		}
		if rg != "" {
			c.RouteTable.ID = RouteTableID(sub, rg, aj.RouteTableName)
			from("routeTable.id", "subscriptionId, "+rgKey+", routeTableName")
		}
	}
	if len(c.Subnets) == 0 && aj.VnetName != "" && aj.SubnetName != "" && sub != "" {
		rg, rgKey := aj.VnetResourceGroup, "vnetResourceGroup"
		if rg == "" {
			rg, rgKey = aj.ResourceGroup, "resourceGroup"
		}
		if rg != "" {
			c.Subnets = []string{SubnetID(sub, rg, aj.VnetName, aj.SubnetName)}
			from("subnets", "subscriptionId, "+rgKey+", vnetName, subnetName")
		}
	}
}

// RouteTableID returns the ARM ID of a route table.
func RouteTableID(subscription, resourceGroup, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/routeTables/%s", subscription, resourceGroup, name)
}

// SubnetID returns the ARM ID of a subnet.
func SubnetID(subscription, resourceGroup, vnet, subnet string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/subnets/%s", subscription, resourceGroup, vnet, subnet)
}

// canonicalCloud returns the canonical spelling of an Azure cloud name,
// accepting the aliases cloud-provider-azure and the Azure CLI accept.
func canonicalCloud(name string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "azurepubliccloud", "azurecloud", "public":
		return AzurePublicCloud, true
	case "azurechinacloud", "china":
		return AzureChinaCloud, true
	case "azureusgovernmentcloud", "azureusgovernment", "usgovernment":
		return AzureUSGovernmentCloud, true
	}
	return "", false
}

// cleanYAMLError drops the decoder's "error converting YAML to JSON:" and
// "yaml:" prefixes and joins the lines, keeping the line number and reason.
func cleanYAMLError(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "yaml: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return strings.Join(strings.Fields(msg), " ")
}
