# The two commands of the README:  make book  (run every chapter, build the site)  and  make test.
# Both set up .venv on first use. torch is pinned here, not in pyproject.toml (Colab brings its own).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
TORCH   = torch==2.14.1 torchvision==0.29.1

# TORCH_INDEX: where torch comes from, e.g. https://download.pytorch.org/whl/cpu for its CPU build (the Pages
# workflow); empty: the default index.
TORCH_INDEX ?=

.PHONY: setup html-setup browser fashion-mnist glyph-fonts slurm mathjax book notebooks html test test-fast testbed-seed lint clean

setup: $(VENV)/.installed browser fashion-mnist glyph-fonts slurm mathjax

# What `make html` needs and nothing more (the Pages workflow renders the stored outputs: no browser, fonts,
# datasets, SLURM or test tools): torch and the package (the API page imports it) with the book's tools, MathJax.
html-setup: $(VENV)/.book mathjax

$(VENV)/.book: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e ".[book]"
	touch $@

$(VENV)/.installed: $(VENV)/.book
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
mathjax: $(VENV)/.book
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

# The glyph test bed's fonts (dml_tutorial/data/rendered.py): 11 CJK faces from Debian's packages, about 250 MB.
GLYPH_FONTS = fonts-noto-cjk fonts-arphic-ukai fonts-arphic-uming fonts-wqy-zenhei fonts-wqy-microhei \
              fonts-ipafont-gothic fonts-ipafont-mincho fonts-hanazono
APT_GLYPHS = apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(GLYPH_FONTS) >/dev/null
glyph-fonts:
	@[ -f /usr/share/fonts/truetype/hanazono/HanaMinA.ttf ] && [ -f /usr/share/fonts/opentype/noto/NotoSerifCJK-Bold.ttc ] \
	  || ! command -v apt-get >/dev/null || \
	{ echo "installing the glyph test bed's fonts (apt: $(GLYPH_FONTS))"; \
	  if [ "$$(id -u)" = 0 ]; then $(APT_GLYPHS); \
	  elif command -v sudo >/dev/null; then sudo sh -c '$(APT_GLYPHS)'; \
	  else echo "note: no glyph fonts; data.load_dataset('glyphs') will say which packages to install"; fi; }

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

html: html-setup          ## build the static site from the notebooks' stored outputs
	$(BIN)/jupyter-book build . --quiet

book: notebooks html      ## the main job

# One pytest run on two workers (pytest-xdist, whole files each): the unit tests, the book build with its browser
# checks, and nbval over the chapters, whose kernels get their own environment (notebooks/conftest.py: another
# machine's emulation, one thread each; two kernels of 2 threads each on 2 cores ran several times slower). Files
# are handed out longest first (tests/helpers.py: SLOW_FIRST; --no-loadscope-reorder keeps that order, where
# pytest-xdist would sort files by their number of tests and run a one-test file of minutes last). The run writes a
# JUnit report; benchmarks/bench_suite.py sums it into _build/test-durations.txt (time by kind, by file, the slowest
# tests), written even when a test fails, so the next slowdown is visible. nbval's checks log every trained number
# (_build/nbval-drift.jsonl); benchmarks/bench_nbval_drift.py turns it into the drift, the derived tolerance and the
# power per chapter (_build/nbval-drift.json).
XDIST = -n 2 --dist loadfile --no-loadscope-reorder

test: setup               ## the unit tests, the book build and nbval over the chapters, on 2 workers
	@mkdir -p _build && rm -f _build/test-suite.xml
	$(BIN)/python -m pytest $(XDIST) tests notebooks --junitxml=_build/test-suite.xml; status=$$?; \
	$(BIN)/python benchmarks/bench_suite.py _build/test-suite.xml --out _build/test-durations.txt || true; \
	[ -s _build/nbval-drift.jsonl ] && $(BIN)/python benchmarks/bench_nbval_drift.py --out _build/nbval-drift.json \
	  || true; exit $$status

# The fast lane, for the edit-test loop: the unit tests that take seconds each (no notebook, book build, chapter run,
# cluster or nbval), on 2 workers: about a minute on 2 cores. Markers per kind (tests/helpers.py: kind): e.g.
# `pytest -m nbval notebooks/03_dcdl.ipynb`. `make test` stays the command that decides.
test-fast: setup
	$(BIN)/python -m pytest $(XDIST) -m "unit and not slow" tests

# One test bed II seed of one chapter re-run and checked against its committed run (dml-tutorial compare: the
# seed's numbers against the spread of the other nine; the weekly testbed workflow runs it for every chapter). The
# seed follows the ISO week unless given: `make testbed-seed CHAPTER=cbswr SEED=3`. About 30-45 minutes on 2 cores.
CHAPTER ?= cbswr
SEED ?= $(shell expr $$(date +%V) % 10)
testbed-seed: setup       ## re-run one test bed II seed of CHAPTER and check it against its committed run
	$(BIN)/dml-tutorial run $(CHAPTER) --profile glyphs2 -p SEED $(SEED) --output _build/testbed/$(CHAPTER) \
	  --results _build/testbed/$(CHAPTER)/glyphs2_seed-$(SEED).json
	$(BIN)/dml-tutorial compare _build/testbed/$(CHAPTER)/glyphs2_seed-$(SEED).json

lint: setup
	$(BIN)/ruff check dml_tutorial tests benchmarks
	$(BIN)/ruff check --select F,E9 notebooks

clean:
	rm -rf _build .pytest_cache
