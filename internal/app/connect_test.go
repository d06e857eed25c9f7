package app

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/cloud/azure"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/migrate"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

// credentialFunc is an azcore.TokenCredential made of a function: the
// identity endpoints it stands for (IMDS, Entra ID) are not on loopback.
type credentialFunc func(ctx context.Context) (azcore.AccessToken, error)

func (f credentialFunc) GetToken(ctx context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return f(ctx)
}

// unreachable behaves like a managed identity request off Azure: nothing
// answers, the library keeps retrying until the context ends.
var unreachable = credentialFunc(func(ctx context.Context) (azcore.AccessToken, error) {
	<-ctx.Done()
	return azcore.AccessToken{}, ctx.Err()
})

// refused fails at once with the Azure Identity library's kind of message:
// a first paragraph, then troubleshooting.
var refused = credentialFunc(func(context.Context) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, errors.New("ManagedIdentityCredential: no identity assigned to this VM\n\nTo troubleshoot, visit https://aka.ms/azsdk/go/identity/troubleshoot#managed-id")
})

func TestFirstToken(t *testing.T) {
	source := azure.DescribeCredential(azure.CredentialConfig{UseManagedIdentity: true})
	tests := []struct {
		name    string
		cred    azcore.TokenCredential
		want    []string
		notWant string
	}{
		{"off Azure: the timeout with the reason", unreachable,
			[]string{"azure credential: no token from system-assigned managed identity (the VM's identity endpoint, IMDS) within 50ms: not on Azure"}, ""},
		{"refused: the library's first paragraph", refused,
			[]string{"azure credential: system-assigned managed identity", "ManagedIdentityCredential: no identity assigned to this VM"}, "troubleshoot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var shown []string
			a := &App{Log: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" },
				Progress: func(what string) func(error) { shown = append(shown, what); return func(error) {} }}
			err := a.firstToken(context.Background(), tc.cred, source, "https://management.azure.com/.default", 50*time.Millisecond)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q contains %q", err, tc.notWant)
			}
			if len(shown) != 1 || !strings.Contains(shown[0], source) {
				t.Errorf("progress shown: %q, want one line naming %s", shown, source)
			}
		})
	}
}

// TestErrorsDoNotRepeatTheirPrefix: an error of the cloud layer names the
// operation and the resource once; doctor and migrate add nothing that
// repeats it.
func TestErrorsDoNotRepeatTheirPrefix(t *testing.T) {
	env := fabrictest.New(t, fabric.Options{}, fabrictest.KTHW)
	c, err := azure.New(azure.Options{Credential: refused, ClientOptions: env.Server.ClientOptions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// doctor's observation is the controller's dry run.
	res := controller.New(controller.Config{Cluster: "kthw", RouteTableID: fabrictest.KTHWTable, Subnets: []string{fabrictest.KTHWSubnet}, RouteLimit: 400}, c, nil, nil).Inspect(ctx, nil, observe.Scope{})
	derr := res.Err
	if derr == nil && res.Decision != nil {
		derr = res.Decision.TableErr
	}
	_, merr := migrate.Run(ctx, c, migrate.Options{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, From: fabrictest.KTHWTable, To: fabrictest.KTHWTable2, Subnets: []string{fabrictest.KTHWSubnet}, Limit: 400}, migrate.RunOptions{DryRun: true})
	for name, err := range map[string]error{"doctor": derr, "migrate": merr} {
		if err == nil {
			t.Errorf("%s: no error with a credential that fails", name)
			continue
		}
		msg := err.Error()
		for _, op := range []string{"reading route table", "reading subnet"} {
			if n := strings.Count(msg, op); n > 1 {
				t.Errorf("%s: %q appears %d times in %q", name, op, n, msg)
			}
		}
		if !strings.Contains(msg, "ManagedIdentityCredential") {
			t.Errorf("%s: %q does not say why", name, msg)
		}
	}
}
