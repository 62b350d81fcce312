"""What to search: reading the question, plans, follow-up rounds, one scale for scores."""
