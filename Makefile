# chj top-level build.  `make help` lists the targets.
PREFIX  ?= /usr/local
DESTDIR ?=
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
SYSTEMD_GENERATOR_DIR ?= /usr/lib/systemd/system-generators

# Kernel to build dm-chj for: scripts/kernel-version, this release's own
# kernel (the one linux-headers-amd64 depends on: 6.1 on Debian 12, 6.12 on
# Debian 13; installing another does not change it).  Override with KVER=
# or KDIR=.  A kernel of a newer release lives in a kernel root, a chroot of
# that release (scripts/kroot): its module is built in there (KRUN), with
# that release's compiler and kbuild, KDIR being the path inside it.
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
KROOT := $(if $(KVER),$(shell scripts/kroot root $(KVER)))
KRUN := $(if $(filter-out /,$(KROOT)),scripts/kroot run $(KROOT))
# The second kernel make check tests (6.12 on Debian 12; KVER2= for none)
# and the newest Debian kernel, in a kernel root (trixie-backports' today;
# make deps discovers and prepares it; KVER3= for none).
ifeq ($(origin KVER2),undefined)
  KVER2 := $(shell scripts/kernel-version --second)
endif
ifeq ($(origin KVER3),undefined)
  KVER3 := $(shell scripts/kernel-version --newest)
endif
export KVER KDIR KVER2 KVER3
TEST_KVERS := $(KVER) $(filter-out $(KVER),$(KVER2)) $(filter-out $(KVER) $(KVER2),$(KVER3))

.PHONY: all module modules sparse-all check-build check-long userspace tests deps check check-unit check-vm check-sanitize \
	install install-tools deb mkpatch check-intree clean demo help e2e-debs checkpatch sparse dkms-modules bench bench-tools check-host check-uapi

all: module userspace tests bench-tools

help:
	@echo 'make              build dm-chj.ko and the userspace tools'
	@echo 'make deps         install build and test packages with apt-get'
	@echo 'make check        checkpatch, sparse, unit tests, host tests, then every VM test; ends "N passed, N failed"'
	@echo 'make check-long   make check with every VM test on every kernel, then check-intree'
	@echo 'make check-unit   the unit tests of both tools (plain, ASan+UBSan, valgrind), generator test, short libFuzzer runs'
	@echo 'make check-uapi   the userspace built against other UAPI headers (6.12, bookworm as released)'
	@echo 'make check-host   chj-resolve against ground truth on loop devices (root)'
	@echo 'make check-vm T=name   one VM script by name (tests/vm, tests/vm/selftest, tests/vm/manual, bench/vm); no T = all tests'
	@echo 'make demo         boot the VM and show chj at work'
	@echo 'make bench        benchmarks into build/bench.db (see BENCHMARKS.md)'
	@echo 'make checkpatch   checkpatch.pl --strict on dm-target/'
	@echo 'make sparse       sparse on dm-target/ (make C=2)'
	@echo 'make install DESTDIR=... PREFIX=/usr'
	@echo 'make deb          the Debian packages chj and dm-chj-dkms into build/deb/ (lintian-checked)'
	@echo 'make mkpatch KSRC=linux-source-X.tar.xz   dm-chj as an in-tree patch series (build/mkpatch/)'
	@echo 'make check-intree the series applied to linux-source 6.12+, checkpatch, dm-chj.ko built in tree'
	@echo 'KVER=... or KDIR=... choose the kernel the module is built for (and VM tests boot)'
	@echo 'KVER2=...         the second kernel make check tests (default: the newest of another series, 6.12 on Debian 12)'
	@echo 'KVER3=...         the newest Debian kernel make check tests (default: scripts/kroot newest; KVER_NEWEST= pins it in make deps)'

# Each kernel's module is built in its own directory, build/module/KVER/
# (symbolic links to dm-target/ and include/; kbuild writes its objects
# beside them), so building for a second kernel never clobbers the first.
# dm-target/dm-chj.ko is a copy of the default kernel's
# (scripts/kernel-version); scripts/vm-test loads build/module/KVER's.
MODDIR = $(CURDIR)/build/module/$(KVER)
DEFAULT_KVER := $(shell scripts/kernel-version)
define kbuild_tree
	@mkdir -p $(MODDIR)/dm-target
	@ln -sfn $(CURDIR)/include $(MODDIR)/include
	@find $(MODDIR)/dm-target -xtype l -delete
	@for f in dm-target/Kbuild $(filter-out %.mod.c,$(wildcard dm-target/*.[ch])); do \
		ln -sf $(CURDIR)/$$f $(MODDIR)/dm-target/; done
endef

module:
	@if [ -z "$(KVER)" ] || [ ! -d "$(filter-out /,$(KROOT))$(KDIR)" ]; then \
		echo "chj: no kernel build tree found (install linux-headers-amd64, or set KDIR=)" >&2; exit 1; fi
	@echo "  MODULE  dm-chj for $(KVER) ($(filter-out /,$(KROOT))$(KDIR)) in build/module/$(KVER)"
	$(kbuild_tree)
	$(KRUN) $(MAKE) -C $(KDIR) M=$(MODDIR)/dm-target KCFLAGS=-Werror modules
	@if [ "$(KVER)" = "$(DEFAULT_KVER)" ]; then cp $(MODDIR)/dm-target/dm-chj.ko dm-target/dm-chj.ko; fi

# The module (and sparse) for every kernel make check tests.
# KVER's first (module), then the others: two builds of one tree at once
# (make -j) would race.
modules: module
	@for k in $(filter-out $(KVER),$(TEST_KVERS)); do \
		$(MAKE) module KVER=$$k KDIR=/lib/modules/$$k/build || exit 1; done

# DKMS's build of the module for each test kernel (the dkms VM test loads it).
dkms-modules:
	@for k in $(TEST_KVERS); do scripts/dkms-build $$k || exit 1; done

# After the modules: sparse rebuilds in their trees.
sparse-all: modules
	@for k in $(TEST_KVERS); do $(MAKE) sparse KVER=$$k KDIR=/lib/modules/$$k/build || exit 1; done

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
# The .debs the e2e VM test installs (the guest has no network): build/e2e/debs.
e2e-debs:
	scripts/e2e-debs

# The build and kernel-style lint first, JOBS (the CPUs) at a time: 67 s
# one at a time on 2 cores, in make check's critical path; then the unit,
# host and VM tests.
JOBS ?= $(shell nproc)
check:
	$(MAKE) -j$(JOBS) -Orecurse check-build
	scripts/run-checks

# check-long: the packages first, as the deb-install VM test installs them
# (make check builds them beside the VM tests, result "deb").
check-long:
	$(MAKE) -j$(JOBS) -Orecurse check-build
	$(MAKE) deb
	scripts/run-checks --long
	scripts/check-intree

# The Debian packages chj and dm-chj-dkms into build/deb/ (scripts/mkdeb:
# dpkg-buildpackage from a copy of the tree, then lintian).
deb:
	scripts/mkdeb

# The in-tree patch series against KSRC (a linux-source tarball or tree)
# into build/mkpatch/KERNELVERSION/; check-intree applies it to every
# /usr/src/linux-source-X.tar.xz from 6.12 on, and the newest kernel's in
# its kernel root (built there), and builds dm-chj.ko in tree (make
# check-long runs it: minutes of compiling; make check makes the series and
# checkpatches it, results mkpatch:X).
KSRC ?= /usr/src/linux-source-6.12.tar.xz
mkpatch:
	scripts/mkpatch $(KSRC)

# all: the VM tests of the in-tree module (smoke, order-trace) run the
# tree's tools.
check-intree: all
	scripts/check-intree

check-build: all modules dkms-modules checkpatch sparse-all e2e-debs

check-unit: userspace
	scripts/run-checks --unit

check-uapi:
	scripts/run-checks --uapi

check-host: userspace
	scripts/run-checks --host

check-vm: all e2e-debs
	scripts/run-checks --vm $(T)

checkpatch:
	scripts/checkpatch-module

# Fails on any sparse warning (make C=2 itself does not).
sparse:
	@mkdir -p build
	$(kbuild_tree)
	@$(KRUN) $(MAKE) -C $(KDIR) M=$(MODDIR)/dm-target C=2 modules >build/sparse-$(KVER).log 2>&1 || \
		{ cat build/sparse-$(KVER).log; exit 1; }
	@if grep -E '(warning|error):' build/sparse-$(KVER).log; then echo "sparse ($(KVER)): not clean" >&2; exit 1; fi
	@echo "sparse ($(KVER)): clean"

demo: all
	scripts/vm-test demo

bench: all
	scripts/bench

# The module, the tools and their man pages, the boot-time generator (which
# runs chj from SBINDIR: written into it here).  Not the test or benchmark
# helpers, so Check and SQLite are not needed to install.
install: module install-tools
	install -D -m 0644 $(MODDIR)/dm-target/dm-chj.ko $(DESTDIR)/lib/modules/$(KVER)/updates/dm-chj.ko

# What install puts in place but the module: the chj package's contents
# (debian/rules runs it with PREFIX=/usr; the module is dm-chj-dkms's).
install-tools: userspace
	$(MAKE) -C userspace install DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) SBINDIR=$(SBINDIR) MANDIR=$(MANDIR)
	install -d $(DESTDIR)$(SYSTEMD_GENERATOR_DIR)
	sed 's|@SBINDIR@|$(SBINDIR)|' userspace/systemd/chj-generator >$(DESTDIR)$(SYSTEMD_GENERATOR_DIR)/chj-generator
	chmod 0755 $(DESTDIR)$(SYSTEMD_GENERATOR_DIR)/chj-generator
	install -D -m 0644 userspace/systemd/chjtab.example \
		$(DESTDIR)$(PREFIX)/share/doc/chj/chjtab.example

clean:
	@# dm-chj.ko; and what in-tree module builds (before build/module/) left.
	cd dm-target && rm -f dm-chj.ko *.o *.mod *.mod.c .*.cmd modules.order Module.symvers
	$(MAKE) -C userspace clean
	@for d in $(TEST_TOOL_DIRS); do $(MAKE) -C $$d clean; done
	$(MAKE) -C scripts/bench-db clean
	rm -rf build
