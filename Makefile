# The two commands of the README:  make book  (run every chapter, build the site)  and  make test.
# Both set up .venv on first use. torch is pinned here, not in pyproject.toml (Colab brings its own).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
TORCH   = torch==2.14.1 torchvision==0.29.1

.PHONY: setup browser fashion-mnist slurm mathjax book notebooks html test lint clean

setup: $(VENV)/.installed browser fashion-mnist slurm mathjax

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e ".[book,dev]"
	touch $@

# Chromium for the browser test of the book (tests/test_book.py): Debian's package, driven by Playwright.
APT_CHROMIUM = apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || [ -n "$$CHROMIUM" ] || \
	{ echo "installing Chromium (apt) for the browser test"; \
	  if [ "$$(id -u)" = 0 ]; then $(APT_CHROMIUM); \
	  elif command -v sudo >/dev/null; then sudo sh -c '$(APT_CHROMIUM)'; \
	  else echo "error: install Chromium (Debian: apt-get install chromium) or set CHROMIUM=/path/to/it" >&2; exit 1; fi; }

# MathJax 3, served by the site itself (book/fetch_mathjax.py: npm registry, SHA-256 checked, into book/_vendor/).
mathjax: $(VENV)/.installed
	@$(BIN)/python book/fetch_mathjax.py >/dev/null

# Fashion-MNIST, the real data every machine here can have: Debian's package puts the four original IDX files under
# /usr/share/datasets/fashion-mnist, where dml_tutorial.data.fashion_mnist finds them (elsewhere torchvision downloads).
APT_FASHION = apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null
fashion-mnist:
	@[ -d /usr/share/datasets/fashion-mnist ] || ! command -v apt-get >/dev/null || \
	{ echo "installing Fashion-MNIST (apt: dataset-fashion-mnist)"; \
	  if [ "$$(id -u)" = 0 ]; then $(APT_FASHION); \
	  elif command -v sudo >/dev/null; then sudo sh -c '$(APT_FASHION)'; \
	  else echo "note: no Fashion-MNIST package; torchvision will download it when a chapter needs it"; fi; }

# A one-node SLURM cluster for tests/test_slurm.py (the sweep's --executor slurm, started there on localhost as root):
# Debian's slurmctld, slurmd, slurm-client and munge. Optional: without them (or without root) that test is skipped.
APT_SLURM = apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
slurm:
	@command -v slurmctld >/dev/null || ! command -v apt-get >/dev/null || \
	{ echo "installing SLURM and munge (apt) for the cluster test"; \
	  if [ "$$(id -u)" = 0 ]; then $(APT_SLURM); \
	  elif command -v sudo >/dev/null; then sudo sh -c '$(APT_SLURM)'; \
	  else echo "note: no SLURM; tests/test_slurm.py will be skipped"; fi; }

notebooks: setup          ## execute every chapter with papermill, in place, in its default profile
	$(BIN)/python -m dml_tutorial run all

html: setup               ## build the static site from the notebooks' stored outputs
	$(BIN)/jupyter-book build . --quiet

book: notebooks html      ## the main job

test: setup               ## unit tests and the book build on 2 workers, then nbval notebook by notebook (each uses both cores)
	$(BIN)/python -m pytest -n 2 --dist loadfile tests
	$(BIN)/python -m pytest notebooks

lint: setup
	$(BIN)/ruff check dml_tutorial tests benchmarks
	$(BIN)/ruff check --select F,E9 notebooks

clean:
	rm -rf _build .pytest_cache
