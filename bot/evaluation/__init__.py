"""``confer eval``: datasets, scoring, the suites and their report."""
