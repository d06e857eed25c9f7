package azure_test

import (
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
)

func withMaxRetryDelay(env *fabrictest.Env, d time.Duration) *arm.ClientOptions {
	o := env.Server.ClientOptions()
	o.Retry.MaxRetries = 2
	o.Retry.MaxRetryDelay = d
	return o
}
