"""The research graph: plan → research (one Send branch per collection) → synthesize.

Imports ``retrieval`` and LangGraph; never Slack. No ``from __future__ import annotations`` here:
LangGraph injects ``runtime`` by annotation.
"""
