"""Re-export of the three names ``harness.runner`` takes for scenario faults.

The strace mechanics live in ``harness.faults.strace``; this module goes once the runner
imports them from there.
"""

from __future__ import annotations

from .strace import scenario_fault, scenario_wrapper, strace_unavailable

__all__ = ["scenario_fault", "scenario_wrapper", "strace_unavailable"]
