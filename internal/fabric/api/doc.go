// Package api is the wire of the fabric's Azure Resource Manager API, shared
// by the server and every resource provider: the parsed request (Request,
// its Caller and Target), the answer (Response) and the handler signature,
// ARM's error body and codes (Error), resource IDs and names, the request
// rules every resource shares (If-Match/If-None-Match, tags, locations,
// paging links) and Azure's case-insensitive reading of JSON bodies
// (DecodeModel).
//
// It holds no state and imports no other fabric package.
package api
