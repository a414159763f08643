# Set-up and everyday commands. `make test` and `make demo` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION := 2.13.0
# where pip finds torch: by default as pip resolves it (PyPI's Linux x86 wheel is a CUDA build);
# make install TORCH_INDEX=https://download.pytorch.org/whl/cpu for the CPU-only wheel,
# .../whl/cu128 for a CUDA one
TORCH_INDEX ?=
TORCH_FLAGS := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))

.PHONY: install test demo bench clean

install: $(VENV)/.installed

# torch is installed first and pinned: the CPU wheel on this machine, never a newer CUDA build
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(TORCH_FLAGS) torch==$(TORCH_VERSION)
	$(PY) -m pip install --quiet -e '.[test,interop,serve,documents]'
	touch $@

# lint, type check, the suite, then the numerics again on narrower instruction sets: PyTorch's kernels
# differ between AVX-512, AVX2 and none, and a tolerance tuned on one may fail on another
NUMERICS := tests/model tests/test_cpu.py
# the suite in two processes (tests/__init__.py says why), each test file whole in one of them
TEST_WORKERS ?= 2
test: install
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m mypy
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal
	ATEN_CPU_CAPABILITY=avx2 $(PY) -m pytest -q $(NUMERICS)
	ATEN_CPU_CAPABILITY=default $(PY) -m pytest -q $(NUMERICS)

demo: install
	bash scripts/demo.sh

# the decoding benchmark against Hugging Face and CTranslate2 (about 15 minutes; docs/benchmarks.md)
bench: install
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) benchmarks/decode_speed.py --repeats 3 --rounds 3

clean:
	rm -rf $(VENV) build src/*.egg-info
