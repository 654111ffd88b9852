# phaseprobe: build, test, test-gpu, bench, demo, install.
#
#   make            phaseprobe.so, libphaseprobe.a and the C example
#   make test       non-GPU specs (installs Debian packages first when root)
#   make test-gpu   GPU specs (tag #gpu), on a machine with a driver
#   make asan       the non-GPU specs under AddressSanitizer + UBSan
#   make bench      benchmarks, printing ratios against in-run baselines
#   make demo       the demo (GPU if present, else the recorded log)
#
# Honours LUA_INCDIR (default /usr/include/lua5.4), CUDA_HOME (default
# /usr/local/cuda), LUA (default lua5.4), PREFIX/LIBDIR/LUADIR for install.

LUA        ?= lua5.4
LUA_INCDIR ?= /usr/include/lua5.4
CUDA_HOME  ?= /usr/local/cuda
CC         ?= cc
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib/lua/5.4
LUADIR     ?= $(PREFIX)/share/lua/5.4
BINDIR     ?= $(PREFIX)/bin

OPT      ?= -O2
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= $(OPT) -g
CFLAGS   += $(WARN) -std=gnu11 -fPIC -fvisibility=hidden -pthread
CPPFLAGS += -Icsrc -I$(LUA_INCDIR)
# Headers that Debian installs beside Lua's (xxhash.h) are found through the
# parent of LUA_INCDIR, so an unpacked package tree works as well as /usr.
CPPFLAGS += -idirafter $(dir $(patsubst %/,%,$(LUA_INCDIR)))
LDLIBS   += -ldl -lm -pthread

# CUDA toolkit headers: optional. Without them the module still builds, for
# analysis only, and says so.
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
  CPPFLAGS += -DPP_HAVE_CUDA_H -idirafter $(CUDA_HOME)/include
  CUDA_NOTE := CUDA headers: $(CUDA_HOME)/include
else
  CUDA_NOTE := CUDA headers not found under $(CUDA_HOME): building without the CUDA layer (analysis only)
endif

BUILD    := build
CORE_SRC := $(filter-out csrc/lua_%.c,$(wildcard csrc/*.c))
LUA_SRC  := $(wildcard csrc/lua_*.c)
HDRS     := $(wildcard csrc/*.h)

CORE_OBJ := $(CORE_SRC:csrc/%.c=$(BUILD)/%.o)
LUA_OBJ  := $(LUA_SRC:csrc/%.c=$(BUILD)/%.o)

MODULE   := phaseprobe.so
STATIC   := $(BUILD)/libphaseprobe.a
C_EXAMPLE := $(BUILD)/c_dispatch
HELPERS  := $(BUILD)/threads_helper

BUSTED   ?= $(LUA) spec/run.lua

.PHONY: all clean test test-gpu test-deps asan bench demo install uninstall ptx fuzz

all: $(MODULE) $(STATIC) $(C_EXAMPLE) $(HELPERS)
	@echo "phaseprobe: $(CUDA_NOTE)"

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/%.o: csrc/%.c $(HDRS) | $(BUILD)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(MODULE): $(CORE_OBJ) $(LUA_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -o $@ $^ $(LDLIBS)

$(STATIC): $(CORE_OBJ)
	$(AR) rcs $@ $^

$(C_EXAMPLE): examples/c_dispatch.c $(STATIC) csrc/phaseprobe.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

$(BUILD)/threads_helper: spec/helpers/threads_helper.c $(STATIC) csrc/phaseprobe.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

# Installs the Debian packages the tests need when they are missing (as root),
# or says what to install.
test-deps:
	@tools/ensure-deps

test: test-deps all
	$(BUSTED) --exclude-tags=gpu spec

test-gpu: all
	$(BUSTED) --tags=gpu spec

asan:
	$(MAKE) clean
	$(MAKE) all OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" LDFLAGS="-fsanitize=address,undefined"
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0 PHASEPROBE_SANITIZED=1 $(BUSTED) --exclude-tags=gpu,nosan spec
	$(MAKE) clean

bench: all
	@for b in bench/*.lua; do echo "== $$b"; $(LUA) $$b || exit 1; done

demo: test-deps all
	@$(LUA) bin/phaseprobe demo

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(LUADIR)/phaseprobe $(DESTDIR)$(BINDIR)
	install -m 755 $(MODULE) $(DESTDIR)$(LIBDIR)/
	install -m 644 lua/phaseprobe/*.lua $(DESTDIR)$(LUADIR)/phaseprobe/
	install -m 755 bin/phaseprobe $(DESTDIR)$(BINDIR)/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(MODULE) $(DESTDIR)$(BINDIR)/phaseprobe
	rm -rf $(DESTDIR)$(LUADIR)/phaseprobe

# Regenerates the checked-in PTX of examples/kernels/*.cu (needs nvcc).
NVCC ?= $(CUDA_HOME)/bin/nvcc
KERNELS_CU := $(wildcard examples/kernels/*.cu)
ptx: $(KERNELS_CU:.cu=.ptx)
examples/kernels/%.ptx: examples/kernels/%.cu
	$(NVCC) -ptx -arch=compute_90 -O3 $< -o $@

clean:
	rm -rf $(BUILD) $(MODULE)

# Fuzzing with clang's libFuzzer under ASan + UBSan: every fuzz/<name>_fuzz.c
# is linked with the core sources and run for FUZZ_SECONDS seconds (or
# FUZZ_RUNS executions, -1 for no limit). Seeds: the directories listed in
# fuzz/<name>.seeds; dictionary: fuzz/<name>.dict; the growing corpus and any
# crash land in fuzz-out/<name>/. FUZZ_ARGS passes more libFuzzer flags
# (e.g. FUZZ_ARGS=-fork=2).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= -1
FUZZ_ARGS    ?=
FUZZ_CFLAGS  := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC     := $(wildcard fuzz/*_fuzz.c)
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)

$(BUILD)/fuzz/%: fuzz/%.c $(CORE_SRC) $(HDRS)
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $< $(CORE_SRC) -o $@ $(LDLIBS)

fuzz: $(FUZZ_BIN)
	@set -e; for b in $(FUZZ_BIN); do \
	  n=$$(basename $$b); out=fuzz-out/$$n; mkdir -p $$out/corpus $$out/crashes; \
	  seeds=""; [ -f fuzz/$$n.seeds ] && seeds=$$(cat fuzz/$$n.seeds); \
	  dict=""; [ -f fuzz/$$n.dict ] && dict=-dict=fuzz/$$n.dict; \
	  echo "== $$n: $(FUZZ_SECONDS) s, runs $(FUZZ_RUNS), seeds: $$seeds"; \
	  $$b $$dict -max_total_time=$(FUZZ_SECONDS) -runs=$(FUZZ_RUNS) \
	    -artifact_prefix=$$out/crashes/ -print_final_stats=1 $(FUZZ_ARGS) \
	    $$out/corpus $$seeds; \
	done
