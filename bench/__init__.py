"""Benchmarks: ``make bench`` measures and writes a report; nothing here passes or fails on timing."""
