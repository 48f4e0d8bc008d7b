"""What is true: oracles written from SPEC.md.

Everything here judges an implementation, the reference included, so nothing here may use the
reference's parsers, slugs or store: from ``reference/`` only ``reference.text`` (ECMAScript
string semantics, tested on its own) is imported.  A defect in the reference's grammar must
fail these checks, not pass them.
"""
