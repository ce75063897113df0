# SPDX-License-Identifier: BSD-3-Clause
# vcxl: make (build), make run, make test, make bench, make deps, make fuzz, make install, make qemu,
# make qemu-deb, make qemu-check, make demo
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
MESON_OPTS ?=
FUZZ_TIME  ?= 60
FUZZ_SHORT_TIME ?= 15
RUN_ARGS   ?=
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps build run test test-asan e2e-prep bench fuzz fuzz-short format clean install buildtypes qemu qemu-deb bench-guest demo qemu-check

all: build

deps:
	@./scripts/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	./scripts/run.sh $(BUILD) $(RUN_ARGS)

$(ASAN_BUILD)/build.ninja:
	CC=clang meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false $(MESON_OPTS)

# Unit + integration tests (gcc build), then the same under clang ASan+UBSan,
# then the short fuzz runs; the last line is the summary:
# "N passed, N failed, N skipped" (scripts/test-summary.py).
test: deps
	@$(MAKE) --no-print-directory build
	@$(MAKE) --no-print-directory e2e-prep
	@$(MAKE) --no-print-directory $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	-meson test -C $(BUILD) --print-errorlogs --num-processes 2
	-ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C $(ASAN_BUILD) --print-errorlogs --num-processes 2 --no-suite e2e --no-suite slow
	-@$(MAKE) --no-print-directory fuzz-short
	@./scripts/test-summary.py $(BUILD)/meson-logs/testlog.json $(ASAN_BUILD)/meson-logs/testlog.json \
		$(FUZZ_BUILD)/fuzz-short.json

# The e2e suites' cached inputs, built before any test runs so that no test's timeout
# includes a build (on a busy 2-core machine the iommufd kernel took over 40 minutes and
# e2e-hw timed out inside it): the CXL-aware QEMU (make qemu) and the one guest kernel,
# Linux 7.2 (scripts/guest-kernel.sh: e2e-hw's iommufd boot, e2e-type3-7.2, e2e-type2).
# Each prints its progress on stderr; a failure only makes the suites that need it SKIP
# with the reason, as before. VCXL_E2E_BUILD_KERNEL=0 builds no kernel.
e2e-prep:
	-@./scripts/qemu-build.sh > /dev/null
	-@[ "$${VCXL_E2E_BUILD_KERNEL:-1}" = 0 ] || ./scripts/guest-kernel.sh > /dev/null

# Install under PREFIX (the build directory is configured for it), into DESTDIR
# when set: binaries, libvcxl-client + header + pkg-config file, man pages,
# bash completion, the systemd unit, docs. /usr gets its config in /etc.
install: build
	meson configure $(BUILD) -Dprefix=$(PREFIX) $(if $(filter /usr,$(PREFIX)),-Dsysconfdir=/etc)
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir "$(DESTDIR)")

# Every meson build type with gcc and clang, and Debian's package flags:
# warning-free under werror (minutes: about ten full builds)
buildtypes:
	./scripts/buildtypes.sh

# make bench also measures the guest's CXL window (bench-guest) and live migration with and
# without the device (bench-migrate, issue 23) when the CXL-aware QEMU is already built (make
# qemu) and, for bench-migrate, the 7.2 guest kernel cached; it never builds either itself.
bench: build
	./scripts/bench.sh $(BUILD)
	./scripts/bench-guest.sh $(BUILD) --if-available
	./scripts/bench-migrate.sh $(BUILD) --if-available

# From one guest run: bandwidth through vcxl's committed CXL window vs guest RAM and vs a
# QEMU cxl-type3 window (builds the CXL-aware QEMU if needed).
bench-guest: build
	./scripts/bench-guest.sh $(BUILD)

# The guest's CXL.mem shown end to end (builds or reuses the CXL-aware QEMU and the guest).
demo: build
	./scripts/demo.sh $(BUILD)

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true -Db_lundef=false

fuzz: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	./scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_TIME)

# The bounded run `make test` does: each harness FUZZ_SHORT_TIME seconds (5 x 15 s, mig_load the fifth;
# the 60 s three harnesses had at 20 s each); the
# result file is read by the summary (missing = the fuzz build failed).
fuzz-short: $(FUZZ_BUILD)/build.ninja
	@rm -f $(FUZZ_BUILD)/fuzz-short.json
	ninja -C $(FUZZ_BUILD) fuzzers
	./scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SHORT_TIME) --testlog $(FUZZ_BUILD)/fuzz-short.json

# The CXL-aware QEMU: Debian's 10.2.2 source + vmm/qemu/*.patch, cached in
# ~/.cache/vcxl-qemu-build; the binary's path is the last line.
qemu:
	@./scripts/qemu-build.sh

# vmm/qemu's series checked as QEMU's maintainers would (scripts/qemu-check.sh): QEMU's
# checkpatch.pl on each patch, the tree built after each patch in turn, QEMU's make
# check-unit at the end; one line per patch and a summary, non-zero on any failure.
# Its own cache, ~/.cache/vcxl-qemu-check (first run: a full QEMU build).
qemu-check:
	@./scripts/qemu-check.sh

# That QEMU as the Debian package vcxl-qemu (scripts/qemu-deb.sh, packaging in
# vmm/qemu-deb/debian/): the cached binary of make qemu (built first if needed) packaged by
# dpkg-buildpackage -b into QEMU_DEB_DIR; the .deb's path is the last line.
QEMU_DEB_DIR ?= $(BUILD)/qemu-deb
qemu-deb:
	@./scripts/qemu-deb.sh $(QEMU_DEB_DIR)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
