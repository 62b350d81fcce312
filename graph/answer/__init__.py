"""Choosing and writing the answer's sentences."""
