package ledger

// IsError answers a tools/call with an MCP tool result whose isError is true,
// carrying Message, without running the tool: nothing is written.
type IsError struct {
	// Message is the text of the error result; "" means a default message.
	Message string `json:"message,omitempty" yaml:"message,omitempty" jsonschema_description:"Text of the error result; a default message when unset."`
}

// defaultIsErrorMessage is the text of an is_error result without a message.
const defaultIsErrorMessage = "ledger: injected tool error"

func (f *IsError) apply(p *plan) {
	if p.isError == nil {
		p.isError = f
	}
}

// message returns the text of the error result.
func (f *IsError) message() string {
	if f.Message == "" {
		return defaultIsErrorMessage
	}
	return f.Message
}
