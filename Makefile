# chj top-level build.  `make help` lists the targets.
PREFIX  ?= /usr/local
DESTDIR ?=
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
SYSTEMD_GENERATOR_DIR ?= /usr/lib/systemd/system-generators

# Kernel to build dm-chj for: the running kernel's build tree when it has one,
# else the newest installed linux-headers.  Override with KVER= or KDIR=.
ifeq ($(origin KDIR),undefined)
  ifeq ($(origin KVER),undefined)
    KVER := $(shell scripts/kernel-version)
  endif
  KDIR := /lib/modules/$(KVER)/build
else
  ifeq ($(origin KVER),undefined)
    KVER := $(shell $(MAKE) -s -C $(KDIR) kernelrelease 2>/dev/null)
  endif
endif
export KVER KDIR

.PHONY: all module userspace tests deps check check-unit check-vm check-sanitize \
	install clean demo help checkpatch sparse bench bench-tools check-host

all: module userspace tests bench-tools

help:
	@echo 'make              build dm-chj.ko and the userspace tools'
	@echo 'make deps         install build and test packages with apt-get'
	@echo 'make check        checkpatch, sparse, unit tests, host tests, then every VM test; ends "N passed, N failed"'
	@echo 'make check-unit   unit tests: plain, ASan+UBSan, valgrind, then a short libFuzzer run'
	@echo 'make check-host   chj-resolve against ground truth on loop devices (root)'
	@echo 'make check-vm T=name   one VM test (tests/vm/name.sh); no T = all'
	@echo 'make demo         boot the VM and show chj at work'
	@echo 'make bench        benchmarks into build/bench.db (see BENCHMARKS.md)'
	@echo 'make checkpatch   checkpatch.pl --strict on dm-target/'
	@echo 'make sparse       sparse on dm-target/ (make C=2)'
	@echo 'make install DESTDIR=... PREFIX=/usr'
	@echo 'KVER=... or KDIR=... choose the kernel the module is built for'

module:
	@if [ -z "$(KVER)" ] || [ ! -d "$(KDIR)" ]; then \
		echo "chj: no kernel build tree found (install linux-headers-amd64, or set KDIR=)" >&2; exit 1; fi
	@echo "  MODULE  dm-chj for $(KVER) ($(KDIR))"
	$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-target modules
	@# modpost's generated dm-chj.mod.c is compiled by now; drop it so that
	@# dm-target/*.c is our sources only (checkpatch dm-target/*.c).
	@rm -f dm-target/dm-chj.mod.c

userspace:
	$(MAKE) -C userspace

# Host-built helpers the VM tests run (the repo is read-only in the guest).
TEST_TOOL_DIRS := $(dir $(wildcard tests/*/Makefile))
tests: userspace
	@for d in $(TEST_TOOL_DIRS); do $(MAKE) -C $$d || exit 1; done

# chj-benchdb and chj-benchguest: the benchmark database tool and the
# benchmark VM's helpers (scripts/bench, tests/vm/bench-smoke.sh).
bench-tools:
	$(MAKE) -C scripts/bench-db

deps:
	scripts/install-deps

# Kernel-style lint first (seconds), then the unit and VM tests.
check: all checkpatch sparse
	scripts/run-checks

check-unit: userspace
	scripts/run-checks --unit

check-host: userspace
	scripts/run-checks --host

check-vm: all
	scripts/run-checks --vm $(T)

checkpatch:
	scripts/checkpatch-module

# Fails on any sparse warning (make C=2 itself does not).
sparse:
	@mkdir -p build
	@$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-target C=2 modules >build/sparse.log 2>&1 || \
		{ cat build/sparse.log; exit 1; }
	@rm -f dm-target/dm-chj.mod.c
	@if grep -E '(warning|error):' build/sparse.log; then echo "sparse: not clean" >&2; exit 1; fi
	@echo "sparse: clean"

demo: all
	scripts/vm-test demo

bench: all
	scripts/bench

# The module, the tools and their man pages, the boot-time generator (which
# runs chj from SBINDIR: written into it here).  Not the test or benchmark
# helpers, so Check and SQLite are not needed to install.
install: module userspace
	$(MAKE) -C userspace install DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) SBINDIR=$(SBINDIR) MANDIR=$(MANDIR)
	install -D -m 0644 dm-target/dm-chj.ko $(DESTDIR)/lib/modules/$(KVER)/updates/dm-chj.ko
	install -d $(DESTDIR)$(SYSTEMD_GENERATOR_DIR)
	sed 's|@SBINDIR@|$(SBINDIR)|' userspace/systemd/chj-generator >$(DESTDIR)$(SYSTEMD_GENERATOR_DIR)/chj-generator
	chmod 0755 $(DESTDIR)$(SYSTEMD_GENERATOR_DIR)/chj-generator
	install -D -m 0644 userspace/systemd/chjtab.example \
		$(DESTDIR)$(PREFIX)/share/doc/chj/chjtab.example

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/dm-target clean >/dev/null 2>&1
	$(MAKE) -C userspace clean
	@for d in $(TEST_TOOL_DIRS); do $(MAKE) -C $$d clean; done
	$(MAKE) -C scripts/bench-db clean
	rm -rf build
