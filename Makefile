# gradsync: the two commands of the quick start, and the pieces they are made of.
#   make demo   install what is missing, build, train the demo job on a local 2-worker cluster
#   make test   install what is missing, build, run every test
#   make fuzz   build the fuzz targets with clang and run each for a while (fuzz/README.md)
#   make images build the CPU images of docker/Dockerfile, offline if need be (docker/README.md)
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# `make test TEST_LABELS=REGEX` runs only the tests with a CTest label that REGEX matches
# (tests/README.md lists the labels); empty, the default, runs every test.
TEST_LABELS ?=

.PHONY: all deps configure build test demo demo-binaries fuzz images format clean

all: build

deps:
	@bash scripts/install-deps.sh
	@bash scripts/install-npm-tools.sh || echo "npm packages unavailable: the schema checks will skip"
	@sh scripts/fetch-prometheus.sh $(BUILD_DIR)/third_party/prometheus > /dev/null \
	  || echo "promtool unavailable: the monitoring checks will skip"

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || (cat $(BUILD_DIR).configure.log; exit 1)
	@grep "gradsync:" $(BUILD_DIR).configure.log || true

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600 $(if $(TEST_LABELS),-L '$(TEST_LABELS)')

# The four binaries the demo runs, built quietly: the compiler's output goes to a log, shown
# (its end) only when the build fails; progress is one line.
DEMO_BINARIES = gradsync gradsync-coordinator gradsync-metrics gradsync-worker
demo-binaries: configure
	@bash scripts/build-quietly.sh $(BUILD_DIR) $(JOBS) $(BUILD_DIR).demo-build.log $(DEMO_BINARIES)

# The run writes its weights to $(BUILD_DIR)/demo/artifacts/<job id>/weights.bin; the state
# directory starts empty so that the glob finds this run's file alone.
demo: demo-binaries
	@rm -rf $(BUILD_DIR)/demo
	@$(BUILD_DIR)/bin/gradsync run examples/jobs/demo.yaml --state-dir $(BUILD_DIR)/demo
	@weights=$$(ls $(BUILD_DIR)/demo/artifacts/*/weights.bin) && \
	  echo && echo "text sampled from $$weights:" && echo && \
	  $(BUILD_DIR)/bin/gradsync generate --weights $$weights --prompt "This License" --tokens 300 --seed 1

# Builds the fuzz targets with clang in build-fuzz/ and runs each for FUZZ_SECONDS (fuzz/README.md).
FUZZ_SECONDS ?= 30
fuzz: deps
	@bash scripts/fuzz.sh $(FUZZ_SECONDS)

# The coordinator, metrics, worker-cpu, cli and prometheus images, tagged gradsync/<target>:$(IMAGE_TAG).
IMAGE_TAG ?= dev
images:
	@bash scripts/images.sh --tag $(IMAGE_TAG)

# Formats every C++ and CUDA source with .clang-format (Debian's clang-format package).
format:
	@git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

# --one-file-system: a fresh-machine check interrupted before its clean-up leaves mounts of the
# host's /dev and CUDA toolkit under $(BUILD_DIR)/fresh-machine; never delete through them.
clean:
	@rm -rf --one-file-system $(BUILD_DIR) $(BUILD_DIR).configure.log $${FUZZ_BUILD_DIR:-build-fuzz} $${FUZZ_BUILD_DIR:-build-fuzz}-plugin
