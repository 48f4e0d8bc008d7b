# Every target works as the first command on a fresh clone: it creates .venv and
# installs what is missing (strace too, when run as root and absent).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test lint conformance bench coverage clean hosts

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@if ! command -v strace >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace) \
	      || { echo "make install: could not install strace" >&2; exit 1; }; \
	  else echo "make install: strace missing and not root; crash tests will skip" >&2; fi; \
	fi
	touch $(STAMP)

test: install
	$(PY) -m tests.clause_coverage
	$(PY) -m tests.shared_store_coverage
	$(PY) -m pytest -n auto --cov=memconform.reference --cov-branch --cov-report=term:skip-covered --cov-fail-under=95 tests

# The pinned hosts (issue 23) into ~/.cache/memconform/hosts (or $$MEMCONFORM_HOSTS_CACHE):
# pi 1.6.0 with Node 24 from PyPI by default; HOSTS='pi-1.6.0 pi-0.74.2 opencode-1.18.33
# opencode-plugin-1.18.33' for all.  A failure is one line naming the host.
HOSTS ?= pi-1.6.0
hosts: install
	$(PY) -m memconform.harness.hosts.cache install $(HOSTS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy --strict -p memconform

conformance: install
	$(PY) -m memconform.harness conformance --impl python --parallel 2 --junit reports/conformance.xml --json reports/conformance.json --html reports/conformance.html

# writes reports/bench.md; `make bench OUT=benchmarks/RESULTS.md` updates the committed table
bench: install
	$(PY) -m memconform.harness bench $(if $(OUT),--out $(OUT))

# The peers' own suites against the reference through the JS facade (issue 18): each runs when
# MEMCONFORM_OPENCODE_TESTS / MEMCONFORM_PI_TESTS name its test file, and prints its tally.
.PHONY: peer-suites
peer-suites: install
	$(PY) -m memconform.harness.drivers.peer_suites

# Nemesis runs against the real peers (issue 13): every family and `all` on the shared store,
# pi, OpenCode, all three and the reference alone on the same schedules, then replays; the
# summary lands in reports/nemesis-campaign-<time>/. MINUTES of runs (default 30); the peers
# come from MEMCONFORM_PI_CORE / MEMCONFORM_OPENCODE_PLUGIN (without them: the reference alone).
.PHONY: nemesis-campaign
nemesis-campaign: install
	nice -n 10 $(PY) -m memconform.harness.interleave.campaign --until +$(or $(MINUTES),30) $(if $(OUT),--out $(OUT))

clean:
	rm -rf $(VENV) reports .pytest_cache .mypy_cache .ruff_cache .coverage
