"""memconform: the Python reference for the flat-file agent memory store, and its conformance harness.

One import namespace for everything the wheel installs: ``memconform.reference`` (the
standard-library store), ``memconform.harness`` (the gate and its wings) and
``memconform.scenarios`` (the corpus, read as package data).  In a clone the subpackages are
links to the repository's ``reference/``, ``harness/`` and ``scenarios/`` folders, so a clone,
an editable install, ``mypy`` and the built wheel all see the same module names.
"""

__version__ = "0.1.0"
