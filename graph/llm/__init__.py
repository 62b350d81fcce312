"""The model port, the OpenAI-compatible client, every prompt and output schema."""
