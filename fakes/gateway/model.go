package gateway

import (
	"bytes"
	"encoding/json"
)

// servedModel returns the model id an answer or stream event names: its own
// `model` (a chat completion or chunk, a Responses object) or the `model` of
// the `response` (Responses events) or `message` (Messages events) it
// carries; "" when it names none or is not a JSON object.
func servedModel(data []byte) string {
	var v struct {
		Model    string `json:"model"`
		Response *struct {
			Model string `json:"model"`
		} `json:"response"`
		Message *struct {
			Model string `json:"model"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	switch {
	case v.Model != "":
		return v.Model
	case v.Response != nil && v.Response.Model != "":
		return v.Response.Model
	case v.Message != nil:
		return v.Message.Model
	}
	return ""
}

// renameModel returns data with the model id it names (see servedModel)
// replaced by group, its fields left in their order: what a gateway does
// that reports the model group the app asked for instead of the model the
// upstream served (HideServedModel). Data that names no model is returned as
// it is.
func renameModel(data []byte, group string) []byte {
	served := servedModel(data)
	if served == "" || served == group {
		return data
	}
	from, err := json.Marshal(served)
	if err != nil {
		return data
	}
	to, err := json.Marshal(group)
	if err != nil {
		return data
	}
	for _, sep := range []string{`"model":`, `"model": `} {
		data = bytes.ReplaceAll(data, append([]byte(sep), from...), append([]byte(sep), to...))
	}
	return data
}
