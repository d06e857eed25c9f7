package azure

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

func TestIsForbidden(t *testing.T) {
	answer := func(status int, code string) error {
		req, _ := http.NewRequest(http.MethodGet, "https://management.azure.com/x", nil)
		body := `{"error":{"code":"` + code + `","message":"no"}}`
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}
		return classify("listing gateways", "x", runtime.NewResponseError(resp))
	}
	if !IsForbidden(answer(http.StatusForbidden, "AuthorizationFailed")) {
		t.Error("403 AuthorizationFailed is not forbidden")
	}
	if IsForbidden(answer(http.StatusNotFound, "ResourceNotFound")) {
		t.Error("404 is forbidden")
	}
}
