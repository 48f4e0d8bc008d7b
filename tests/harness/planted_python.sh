#!/bin/sh
# The "interpreter" planted_crash_driver.mjs gives the example driver: whatever it is asked to
# run, it runs the reference's serve with the planted defects (planted_backend.py).
exec "${MEMCONFORM_PLANTED_PYTHON:-python3}" "$(dirname "$0")/planted_backend.py"
