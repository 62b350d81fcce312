"""``confer eval``: ``datasets`` (a benchmark directory read), ``scoring`` (the figures),
``suites`` (what runs: the questions, the same with their evidence hidden, faithfulness,
conversations), ``faithfulness`` (its suite, built from the corpus) and ``report`` (the report's
dict, markdown, ``questions.jsonl`` and plots)."""
