package upstream

import "fmt"

// Classify returns the kind of a model request body for a dialect (chat,
// responses or messages): KindFollowUp when it carries a tool result — a chat
// message of role tool or function, a Responses *_call_output input item
// (or an mcp_call with its output), a Messages user block of type
// tool_result — else KindInitial. A body that is not a JSON object is an
// error. It never panics.
func Classify(endpoint string, body []byte) (string, error) {
	de, ok := dialectByName(endpoint)
	if !ok {
		return "", fmt.Errorf("classify: unknown endpoint %q; want chat, responses or messages", endpoint)
	}
	req, err := de.d.parse(body)
	if err != nil {
		return "", fmt.Errorf("classify %s request: %w", endpoint, err)
	}
	if req.followUp {
		return KindFollowUp, nil
	}
	return KindInitial, nil
}
