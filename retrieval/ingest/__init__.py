"""Turning source files into passages: loaders, chunker, and the indexing pipeline."""
