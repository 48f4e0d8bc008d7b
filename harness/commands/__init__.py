"""Subcommands of ``memconform``: one module each, found by ``harness.cli``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""
