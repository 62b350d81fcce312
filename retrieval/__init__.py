"""Collections, documents, passages and search backends. Never imports LangGraph or Slack."""
