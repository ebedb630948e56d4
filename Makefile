# vrex — two commands on a fresh machine:  `make report` (the main job)  and  `make test` (the test suite).
# Both prepare the environment first (scripts/bootstrap.sh: Debian packages as root, Python venv in .venv).
VENV ?= .venv
PYTEST_WORKERS ?= 2

.PHONY: env report test test-long clean
env:
	@./scripts/bootstrap.sh

report: env
	$(VENV)/bin/vrex report

test: env
	$(VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal

test-long: env
	$(VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal -m slow

clean:
	rm -rf build
