# The seed's block-mcp guardrail for targets/litellm.yaml: it rejects every MCP
# tool call before it runs; a request opts in with "guardrails": ["block-mcp"].
from litellm.exceptions import GuardrailRaisedException
from litellm.integrations.custom_guardrail import CustomGuardrail


class BlockMCPTools(CustomGuardrail):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        raise GuardrailRaisedException(message="MCP tool calls are blocked", blocked_content=True)
