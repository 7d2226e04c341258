# chj-resolve: included from userspace/Makefile (which sets B, ALL_CFLAGS,
# LIBCHJ, PKG_LIBS, CHECK_*, SAN).  Sources are resolve/*.c; unit tests are
# ../tests/unit/resolve/*.c with their own Check runner, run by check-unit.

RESOLVE_PKGS   := ext2fs com_err sqlite3
RESOLVE_CFLAGS := $(shell pkg-config --cflags $(RESOLVE_PKGS))
RESOLVE_LIBS   := $(shell pkg-config --libs $(RESOLVE_PKGS)) -pthread

RESOLVE_SRCS := $(wildcard resolve/*.c)
RESOLVE_HDRS := $(wildcard resolve/*.h)
RESOLVE_OBJS := $(RESOLVE_SRCS:%.c=$(B)/%.o)
RESOLVE_CORE := $(filter-out $(B)/resolve/main.o,$(RESOLVE_OBJS))
RESOLVE_TEST_SRCS := $(wildcard ../tests/unit/resolve/*.c)
RESOLVE_TEST_OBJS := $(patsubst ../tests/unit/resolve/%.c,$(B)/tests/resolve/%.o,$(RESOLVE_TEST_SRCS))
RESOLVE_UNIT := $(B)/resolve-unit-tests

$(B)/resolve/%.o: resolve/%.c $(RESOLVE_HDRS) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(RESOLVE_CFLAGS) -c -o $@ $<

$(B)/tests/resolve/%.o: ../tests/unit/resolve/%.c $(RESOLVE_HDRS) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(RESOLVE_CFLAGS) $(CHECK_CFLAGS) -Iresolve -c -o $@ $<

$(B)/libchjresolve.a: $(RESOLVE_CORE)
	rm -f $@ && ar rcs $@ $^

chj-resolve: $(B)/resolve/main.o $(B)/libchjresolve.a $(LIBCHJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(RESOLVE_LIBS) -lm

# chj-resolve-test: the same program with the test hooks (CHJ_RESOLVE_CHANGES,
# CHJ_RESOLVE_PROGRESS_AFTER, CHJ_RESOLVE_DEBUG; docs/testing.md) compiled in.
# The installed chj-resolve has none: nothing in its environment bypasses the
# device-mapper and fail-mode checks.  Its objects for the files with hooks
# come first, so the archive's plain copies are not linked.
RESOLVE_HOOK_SRCS := resolve/target.c resolve/stats.c resolve/xfslog.c resolve/settle.c
RESOLVE_HOOK_OBJS := $(RESOLVE_HOOK_SRCS:resolve/%.c=$(B)/resolve-test/%.o)

$(B)/resolve-test/%.o: resolve/%.c $(RESOLVE_HDRS) $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(RESOLVE_CFLAGS) -DCHJ_RESOLVE_TEST_HOOKS -c -o $@ $<

# $(B)/chj-resolve-test is the same program kept in $(B): with
# VARIANT=ubsan, the resolver of the host tests (scripts/run-checks --host),
# so that undefined behaviour on a real filesystem stops the run.
chj-resolve-test $(B)/chj-resolve-test: $(B)/resolve/main.o $(RESOLVE_HOOK_OBJS) $(B)/libchjresolve.a $(LIBCHJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(RESOLVE_LIBS) -lm

all: chj-resolve-test

$(RESOLVE_UNIT): $(RESOLVE_TEST_OBJS) $(B)/libchjresolve.a $(LIBCHJ)
	$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(PKG_LIBS) $(RESOLVE_LIBS) -lm

.PHONY: resolve-unit-run resolve-check-unit
resolve-unit-run: $(RESOLVE_UNIT)
	$(RESOLVE_UNIT)

# check-unit runs these first, plain and with ASan+UBSan.
resolve-check-unit:
	$(MAKE) VARIANT=plain resolve-unit-run
	$(MAKE) VARIANT=asan resolve-unit-run
check-unit: resolve-check-unit

# libFuzzer harnesses, one per parser of resolve (clang; skipped, loudly,
# without it): fuzz/fuzz_<name>.c over every resolve source but main.c.
# Seeds: fuzz/seeds/<name>/ (tests/resolve/fuzz-seeds.sh makes them from
# real filesystems); the corpus grows in build/fuzz/resolve-<name>/.
# `make fuzz` runs each RESOLVE_FUZZ_SECONDS (default 5: check-unit);
# `make fuzz RESOLVE_FUZZ_SECONDS=600` for a long run.
RESOLVE_FUZZERS := jbd2 xfs_sb xfslog names ext4map store btrfs btplan
RESOLVE_FUZZ_SECONDS ?= 5
FZ := build/fuzz/resolve
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -I../include -Ilib -Iresolve $(PKG_CFLAGS) \
	$(RESOLVE_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_OBJS := $(patsubst %.c,$(FZ)/%.o,$(filter-out resolve/main.c,$(RESOLVE_SRCS)) $(LIB_SRCS))

$(FZ)/%.o: %.c $(RESOLVE_HDRS) $(HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -c -o $@ $<

$(FZ)/fuzz-%: $(FZ)/fuzz/fuzz_%.o $(FUZZ_OBJS)
	clang -fsanitize=fuzzer,address,undefined -o $@ $^ $(PKG_LIBS) $(RESOLVE_LIBS) -lm

.PHONY: resolve-fuzz resolve-fuzz-run
fuzz: resolve-fuzz
resolve-fuzz:
	@if ! command -v clang >/dev/null; then echo "resolve-fuzz: clang not installed, skipped"; exit 0; fi; \
	$(MAKE) resolve-fuzz-run

resolve-fuzz-run: $(RESOLVE_FUZZERS:%=$(FZ)/fuzz-%)
	@for f in $(RESOLVE_FUZZERS); do \
		corpus=$(FZ)/corpus-$$f log=$(FZ)/$$f.log; \
		mkdir -p $$corpus; \
		if $(FZ)/fuzz-$$f -max_total_time=$(RESOLVE_FUZZ_SECONDS) -max_len=1100000 \
			-rss_limit_mb=2048 -print_final_stats=1 $$corpus fuzz/seeds/$$f >$$log 2>&1; then \
			echo "resolve-fuzz $$f: $$(grep -E 'stat::number_of_executed_units' $$log)"; \
		else \
			tail -n 60 $$log; echo "resolve-fuzz $$f: FAILED (log: userspace/$$log)"; exit 1; \
		fi; \
	done
.SECONDARY: $(FUZZ_OBJS) $(RESOLVE_FUZZERS:%=$(FZ)/fuzz/fuzz_%.o)
