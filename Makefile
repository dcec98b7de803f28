# Two commands for a fresh machine: `make run` and `make test`. Both are idempotent.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: run cluster test lint types unit coverage bench system-deps train-deps fonts clean

# Re-install only when pyproject.toml changes.
$(VENV)/.run-deps: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.dev-deps: pyproject.toml $(VENV)/.run-deps
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

run: $(VENV)/.run-deps
	$(PY) run.py serve --host $(HOST) --port $(PORT)

# Redis + HAProxy + 3 servers on loopback behind http://127.0.0.1:$(PORT)/ (docs/deploy.md).
cluster: $(VENV)/.run-deps system-deps
	$(PY) run.py cluster --port $(PORT)

# Debian packages the tests need: chromium drives the real-browser tests (Playwright's own
# download does not work offline); the wallpaper packages hold photos of the training scenes
# (DEBIAN_PHOTOS in detectors/synth/backgrounds.py); redis-server and haproxy run the cluster
# tests and `make cluster`; coturn is the TURN relay of tests/e2e/test_networks.py.
CLUSTER_PACKAGES := redis-server haproxy
NETWORK_PACKAGES := coturn
WALLPAPER_PACKAGES := mate-backgrounds plasma-workspace-wallpapers ukui-wallpapers \
	lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 gnome-backgrounds
# $(call debian_packages,PACKAGES): installs the missing ones as root, else names them.
define debian_packages
	@missing=""; \
	for package in $(1); do \
	  [ "$$(dpkg-query -W -f='$${db:Status-Status}' $$package 2>/dev/null)" = installed ] \
	    || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "missing Debian packages: run 'sudo apt-get install$$missing'"; exit 1; \
	  fi; \
	fi
endef

system-deps:
	$(call debian_packages,chromium $(WALLPAPER_PACKAGES) $(CLUSTER_PACKAGES) $(NETWORK_PACKAGES))

# lint-imports: the layering in pyproject's [tool.importlinter] (a package imports only those below).
lint: $(VENV)/.dev-deps
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports

types: $(VENV)/.dev-deps
	$(PY) -m mypy

unit: $(VENV)/.dev-deps
	$(PY) -m pytest -q

# The pure cores, voting (the state machine, evidence, tracker, smoothing, presets, k-of-n,
# the simulated detector) and hw_sim, are branch-covered by their own tests; below 100 % fails.
coverage: $(VENV)/.dev-deps
	mkdir -p build
	$(PY) -m coverage run -m pytest -q -p no:cacheprovider tests/voting tests/hw_sim
	$(PY) -m coverage report

test: system-deps lint types unit coverage

# Tables of where the milliseconds go, and the OCR alternative (docs/benchmarks.md). Minutes.
bench: $(VENV)/.run-deps
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) run.py bench

# Training only (PyTorch, onnx): see docs/detector.md. Never needed by run or test.
train-deps: $(VENV)/.dev-deps fonts
	$(PY) -m pip install -q -e '.[train]'

# The fonts the glyph bank is rendered from (detectors/synth/glyphs.py; training only, the bank
# is committed): Debian's CJK print, kai, brush and handwriting faces, and the npm registry's
# fontsource calligraphy families (all OFL-1.1) into build/fonts.
FONT_PACKAGES := fonts-noto-cjk fonts-arphic-ukai fonts-arphic-uming fonts-arphic-gkai00mp \
	fonts-cwtex-fs fonts-cwtex-heib fonts-cwtex-kai fonts-cwtex-ming fonts-cwtex-yen \
	fonts-lxgw-wenkai fonts-wqy-microhei fonts-wqy-zenhei fonts-cns11643-kai \
	fonts-kouzan-mouhitsu fonts-aoyagi-kouzan-t fonts-aoyagi-soseki fonts-klee fonts-seto \
	fonts-kiloji
FONTSOURCE_PACKAGES := @fontsource/ma-shan-zheng@5.3.1 @fontsource/zhi-mang-xing@5.3.0 \
	@fontsource/liu-jian-mao-cao@5.3.0 @fontsource/long-cang@5.3.0 \
	@fontsource/yuji-syuku@5.3.0 @fontsource/yuji-boku@5.3.0 @fontsource/yuji-mai@5.3.0 \
	@fontsource/zcool-kuaile@5.3.0 @fontsource/zcool-qingke-huangyou@5.3.0 \
	@fontsource/yusei-magic@5.3.0 @fontsource/hachi-maru-pop@5.3.0
fonts:
	$(call debian_packages,$(FONT_PACKAGES))
	mkdir -p build/fonts
	npm install --prefix build/fonts --no-save --no-audit --no-fund --silent $(FONTSOURCE_PACKAGES)

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
