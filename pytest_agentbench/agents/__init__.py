"""World-independent agents: the chat-model agent and its configuration."""
