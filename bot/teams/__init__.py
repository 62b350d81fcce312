"""Microsoft Teams: activities in, Adaptive Cards out, over the chat core."""
