"""The terminal: the ``confer`` command line, the terminal surface and its rendering."""
