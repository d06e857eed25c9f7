package api

import (
	"encoding/json"
	"net/http"
)

// WriteControlJSON answers a control endpoint request with v as indented
// JSON.
func WriteControlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Write(append(b, '\n'))
}

// FailControl answers a control endpoint request with an error in ARM's
// shape: {"error": {"code", "message"}}.
func FailControl(w http.ResponseWriter, status int, code, msg string) {
	WriteControlJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// ControlPrefix is the path of the control endpoint; no ARM path starts so.
const ControlPrefix = "/_fabric/"
