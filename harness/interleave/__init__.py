"""Writers racing under our control: the nemesis (timed faults among real writer processes),
the settle step, the campaign and bench built on it, and its regressions' export and replay.

A fault-ish wing with the rules of ``harness.faults`` (the reference only through its seams;
nothing here is loaded by a plain conformance run); the checks that judge a run stay in
``harness.oracles``.
"""
