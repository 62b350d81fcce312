"""The Slack surface: Bolt app, payload parsing, status messages, Block Kit answers."""
