package azure

import (
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// CredentialConfig says how to authenticate to real Azure. It mirrors the
// identity settings of cloud-provider-azure's azure.json.
type CredentialConfig struct {
	// Cloud is azure.json's "cloud": AzurePublicCloud (default),
	// AzureChinaCloud or AzureUSGovernmentCloud.
	Cloud    string
	TenantID string
	// ClientID and ClientSecret: a service principal (aadClientId,
	// aadClientSecret).
	ClientID     string
	ClientSecret string
	// UseManagedIdentity: useManagedIdentityExtension; UserAssignedIdentityID
	// picks a user-assigned identity by client ID or resource ID.
	UseManagedIdentity     bool
	UserAssignedIdentityID string
}

// CloudConfiguration returns the SDK cloud for an azure.json cloud name.
func CloudConfiguration(name string) (cloud.Configuration, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "azurepubliccloud", "azurecloud", "public":
		return cloud.AzurePublic, nil
	case "azurechinacloud", "china":
		return cloud.AzureChina, nil
	case "azureusgovernmentcloud", "azureusgovernment", "usgovernment":
		return cloud.AzureGovernment, nil
	default:
		return cloud.Configuration{}, fmt.Errorf("cloud %q: want AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud", name)
	}
}

// NewCredential picks the credential the way a self-managed cluster expects:
// a service principal when a client secret is given, managed identity when
// asked for, otherwise DefaultAzureCredential (environment, workload
// identity, managed identity, Azure CLI).
func NewCredential(cfg CredentialConfig) (azcore.TokenCredential, error) {
	cl, err := CloudConfiguration(cfg.Cloud)
	if err != nil {
		return nil, err
	}
	co := policy.ClientOptions{Cloud: cl}
	switch {
	case cfg.ClientSecret != "":
		if cfg.TenantID == "" || cfg.ClientID == "" {
			return nil, fmt.Errorf("service principal credential: tenantId and aadClientId are required with aadClientSecret")
		}
		c, err := azidentity.NewClientSecretCredential(cfg.TenantID, cfg.ClientID, cfg.ClientSecret, &azidentity.ClientSecretCredentialOptions{ClientOptions: co})
		if err != nil {
			return nil, fmt.Errorf("service principal credential for client %s: %w", cfg.ClientID, err)
		}
		return c, nil
	case cfg.UseManagedIdentity:
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		if id := cfg.UserAssignedIdentityID; id != "" {
			if strings.HasPrefix(id, "/") {
				o.ID = azidentity.ResourceID(id)
			} else {
				o.ID = azidentity.ClientID(id)
			}
		}
		c, err := azidentity.NewManagedIdentityCredential(o)
		if err != nil {
			return nil, fmt.Errorf("managed identity credential: %w", err)
		}
		return c, nil
	default:
		c, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: co, TenantID: cfg.TenantID})
		if err != nil {
			return nil, fmt.Errorf("default Azure credential: %w", err)
		}
		return c, nil
	}
}

// ClientOptionsFor returns the SDK options for a named Azure cloud.
func ClientOptionsFor(cloudName string) (*arm.ClientOptions, error) {
	cl, err := CloudConfiguration(cloudName)
	if err != nil {
		return nil, err
	}
	return &arm.ClientOptions{ClientOptions: policy.ClientOptions{Cloud: cl}}, nil
}

// DescribeCredential names the credential NewCredential picks for cfg, for
// progress and error messages: which identity, and where it comes from.
func DescribeCredential(cfg CredentialConfig) string {
	switch {
	case cfg.ClientSecret != "":
		return fmt.Sprintf("service principal %s in tenant %s (client secret)", cfg.ClientID, cfg.TenantID)
	case cfg.UseManagedIdentity && cfg.UserAssignedIdentityID != "":
		return fmt.Sprintf("user-assigned managed identity %s (the VM's identity endpoint, IMDS)", cfg.UserAssignedIdentityID)
	case cfg.UseManagedIdentity:
		return "system-assigned managed identity (the VM's identity endpoint, IMDS)"
	default:
		return "DefaultAzureCredential (environment variables, workload identity, managed identity, Azure CLI, Azure Developer CLI)"
	}
}

// TokenScope is the scope of an ARM token in the named cloud.
func TokenScope(cloudName string) (string, error) {
	cl, err := CloudConfiguration(cloudName)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(cl.Services[cloud.ResourceManager].Audience, "/") + "/.default", nil
}
