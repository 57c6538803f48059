package upstream

import (
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"
)

type (
	openaiOption    = option.RequestOption
	anthropicOption = aoption.RequestOption
)

var (
	openaiBaseURL    = option.WithBaseURL
	openaiKey        = option.WithAPIKey
	openaiRetries    = option.WithMaxRetries
	anthropicBaseURL = aoption.WithBaseURL
	anthropicKey     = aoption.WithAPIKey
	anthropicRetries = aoption.WithMaxRetries
	anthropicHeader  = aoption.WithHeader
)
