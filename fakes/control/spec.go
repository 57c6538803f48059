package control

import _ "embed"

// Spec is the OpenAPI 3.1 description of the control API (openapi.yaml),
// served at Prefix+"openapi.yaml". The control API's tests validate every
// request and answer against it.
//
//go:embed openapi.yaml
var Spec []byte
