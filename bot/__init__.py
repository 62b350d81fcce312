"""Composition root: settings, command line, chat surfaces, metrics. The only layer that builds
real clients and the only one that writes text people read."""
