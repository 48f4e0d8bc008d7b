"""Benchmarks (``make bench``): every comparison measured side by side in one run."""
