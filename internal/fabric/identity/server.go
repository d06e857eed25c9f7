package identity

import (
	"context"
	"log/slog"
	"time"
)

// Server serves the login authority, the token endpoints and the
// cloud metadata documents, which take no bearer token.
type Server struct {
	Now        func() time.Time
	Log        *slog.Logger
	Principals PrincipalResolver
}

// PrincipalResolver maps the client a token is asked for to the object ID
// of the principal declared for it (the client ID when none is).
type PrincipalResolver interface {
	PrincipalObjectID(ctx context.Context, client string) string
}
