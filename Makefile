# phaseprobe: build, test, test-gpu, bench, demo, install.
#
#   make            phaseprobe.so and build/libphaseprobe.a, in parallel, quietly
#                   (V=1 shows every command)
#   make demo       the demo (GPU if present, else the recorded log)
#   make repl       the Lua REPL with the module loaded as `pp` (tools/repl)
#   make test       non-GPU specs (installs Debian packages first when root)
#   make test-gpu   GPU specs (tag #gpu), on a machine with a driver
#   make asan       the non-GPU specs under AddressSanitizer + UBSan
#   make tsan       the threaded helpers and specs under ThreadSanitizer
#   make bench      benchmarks, printing ratios against in-run baselines
#   make install    the module, its Lua side, the command and the demo log
#                   (install-lua), the C headers, libphaseprobe.a and
#                   phaseprobe.pc (install-c); DESTDIR is honoured
#   make rock       phaseprobe-VERSION-1.src.rock from this tree (luarocks pack)
#
# Test doubles, helpers and benchmark programs are built only by the targets
# that use them (test, asan, tsan, valgrind, bench, fuzz).
#
# Honours LUA_INCDIR (default /usr/include/lua5.4), CUDA_HOME (default
# /usr/local/cuda), XXHASH_INCDIR, LUA (default lua5.4), and PREFIX, LIBDIR (the Lua C module),
# LUADIR (the Lua side), BINDIR, INCLUDEDIR, CLIBDIR (libphaseprobe.a),
# PKGCONFIGDIR for install.

LUA        ?= lua5.4
LUA_INCDIR ?= /usr/include/lua5.4
# The CUDA toolkit (optional): also from the environment, which is how
# `CUDA_HOME=/opt/cuda luarocks make` reaches it.
CUDA_HOME  ?= /usr/local/cuda
CC         ?= cc
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib/lua/5.4
LUADIR     ?= $(PREFIX)/share/lua/5.4
BINDIR     ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
CLIBDIR    ?= $(PREFIX)/lib
PKGCONFIGDIR ?= $(CLIBDIR)/pkgconfig

# Parallel unless the caller chose a job count (make -jN, or MAKEFLAGS). A
# make run by ours (MAKELEVEL > 0) shares its parent's job slots.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
  MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
# Quiet unless V=1: one line per product, the compiler's own messages always.
ifeq ($(V),1)
  Q :=
  say = :
else
  Q := @
  say = printf '  %-4s %s\n'
endif

OPT      ?= -O2
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= $(OPT) -g
# Flags the build needs whatever CFLAGS a caller (luarocks) passes.
PP_CFLAGS := $(WARN) -std=gnu11 -fPIC -fvisibility=hidden -fno-semantic-interposition -pthread
# Sources live in one folder per area of the data flow (csrc/<area>/); every
# folder is on the include path, so an #include names the header alone.
CSRC_AREAS := include probe record parse stats ptx cuda lua
CPPFLAGS += $(addprefix -Icsrc/,$(CSRC_AREAS)) -I$(LUA_INCDIR)
# Headers that Debian installs beside Lua's (xxhash.h) are found through the
# parent of LUA_INCDIR, so an unpacked package tree works as well as /usr.
LUA_INCPARENT := $(dir $(patsubst %/,%,$(LUA_INCDIR)))
CPPFLAGS += -idirafter $(LUA_INCPARENT)
# xxhash.h where luarocks found it (external dependency XXHASH).
ifneq ($(strip $(XXHASH_INCDIR)),)
  CPPFLAGS += -idirafter $(XXHASH_INCDIR)
endif
# Debian's luaconf.h includes lua5.4-deb-multiarch.h from the multiarch dir.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
ifneq ($(MULTIARCH),)
  CPPFLAGS += -idirafter $(LUA_INCPARENT)$(MULTIARCH)
endif
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
CORE_SRC := $(wildcard $(addsuffix /*.c,$(addprefix csrc/,$(filter-out include lua,$(CSRC_AREAS)))))
LUA_SRC  := $(wildcard csrc/lua/*.c)
HDRS     := $(wildcard csrc/*/*.h)

CORE_OBJ := $(CORE_SRC:csrc/%.c=$(BUILD)/%.o)
LUA_OBJ  := $(LUA_SRC:csrc/%.c=$(BUILD)/%.o)

VERSION  := $(shell sed -n 's/^\#define PP_VERSION "\(.*\)"/\1/p' csrc/include/phaseprobe.h)

MODULE   := phaseprobe.so
STATIC   := $(BUILD)/libphaseprobe.a
C_EXAMPLE := $(BUILD)/c_dispatch
HELPERS  := $(BUILD)/threads_helper $(BUILD)/multi_state $(BUILD)/sink_helper \
            $(BUILD)/libstall_io.so $(BUILD)/lua_host $(BUILD)/schema_threads \
            $(BUILD)/scopes_helper $(BUILD)/record_helper $(BUILD)/script_probe
LUA_LIBDIR ?= /usr/lib/x86_64-linux-gnu
# What the specs run besides the module (test-build lists more below where
# the CUDA headers are found: the fake driver, the fake CUPTI and their C
# programs).
TEST_BINS := $(STATIC) $(C_EXAMPLE) $(HELPERS)
BENCH_BINS := $(BUILD)/bench_probe_cost $(BUILD)/bench_emit_cost

BUSTED   ?= $(LUA) spec/run.lua

.PHONY: all module test-build clean test test-gpu test-gpu-memcheck test-deps demo-deps asan tsan \
        valgrind bench demo repl install install-lua install-c uninstall ptx fuzz rock

# The default: what the module, the command and a C runtime need.
all: $(MODULE) $(STATIC)
module: $(MODULE)
# Everything the specs run.
test-build: $(MODULE) $(TEST_BINS)

$(BUILD):
	@mkdir -p $(BUILD)

# Objects mirror the source tree: csrc/probe/clock.c -> build/probe/clock.o.
$(BUILD)/%.o: csrc/%.c $(HDRS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -c $< -o $@

$(MODULE): $(CORE_OBJ) $(LUA_OBJ)
	@$(say) LD "$@ ($(CUDA_NOTE))"
	$(Q)$(CC) $(CFLAGS) $(PP_CFLAGS) $(LDFLAGS) -shared -o $@ $^ $(LDLIBS)

$(STATIC): $(CORE_OBJ)
	@$(say) AR $@
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(C_EXAMPLE): examples/c_dispatch.c $(STATIC) csrc/include/phaseprobe.h
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

$(BUILD)/threads_helper: spec/helpers/threads_helper.c $(STATIC) csrc/include/phaseprobe.h
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

# The line sink against readers that exit, stall or read slowly (sink_spec).
$(BUILD)/sink_helper: spec/helpers/sink_helper.c $(STATIC) csrc/include/phaseprobe.h
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

# A stalled disk for the sink specs: write/open that sleep (LD_PRELOAD).
$(BUILD)/libstall_io.so: spec/helpers/stall_io.c | $(BUILD)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) -O2 -g $(WARN) -fPIC -shared -o $@ $< -ldl

# A Lua interpreter built with this build's flags (make tsan runs in it).
$(BUILD)/lua_host: spec/helpers/lua_host.c | $(BUILD)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) $< -o $@ $(LDFLAGS) -L$(LUA_LIBDIR) -llua5.4 -Wl,-rpath,$(LUA_LIBDIR) $(LDLIBS)

# C programs the specs run against libphaseprobe.a: threads that each choose
# a schema (dispatches open under their own); the nesting rule through the C
# API (scopes_spec); the record through the C API, the reference's calls and
# the emit mask (reference_spec); our probe driven by the script the
# reference's driver reads (reference_spec).
C_HELPERS := $(BUILD)/schema_threads $(BUILD)/scopes_helper $(BUILD)/record_helper $(BUILD)/script_probe
$(C_HELPERS): $(BUILD)/%: spec/helpers/%.c spec/helpers/check_cases.h $(STATIC) csrc/include/phaseprobe.h
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

# N threads, each with its own lua_State, running one script (multi-GPU specs).
$(BUILD)/multi_state: spec/helpers/multi_state.c | $(BUILD)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) $< -o $@ -L$(LUA_LIBDIR) -llua5.4 -Wl,-rpath,$(LUA_LIBDIR) $(LDLIBS)

$(BUILD)/bench_%: bench/%.c bench/rounds.h $(STATIC) csrc/include/phaseprobe.h
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDLIBS)

# Installs the Debian packages the tests (test-deps) or the build and the
# demo (demo-deps) need when they are missing (as root), or says what to
# install. They run before anything is compiled.
test-deps:
	@tools/ensure-deps test
demo-deps:
	@tools/ensure-deps build

# .busted leaves the #gpu specs out of the default run; --run=gpu takes
# only them.
test: test-deps
	@$(MAKE) --no-print-directory test-build
	$(BUSTED) spec

test-gpu: test-build
	$(BUSTED) --run=gpu spec

# The GPU specs under compute-sanitizer memcheck, once: timing specs (the
# sanitizer slows every call) and specs that provoke driver errors on
# purpose (reported as API errors) are left out.
SANITIZER ?= compute-sanitizer
test-gpu-memcheck: test-build
	$(SANITIZER) --tool memcheck --target-processes application-only \
	  --error-exitcode 9 $(BUSTED) --run=gpu --exclude-tags=timing,fault,cupti spec

asan:
	$(MAKE) clean
	$(MAKE) test-build OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" LDFLAGS="-fsanitize=address,undefined"
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0 PHASEPROBE_SANITIZED=1 $(BUSTED) --exclude-tags=gpu,nosan spec
	$(MAKE) clean

# ThreadSanitizer: the C helpers that emit from several threads (each C
# thread its own accumulator; threads that each choose their schema; N Lua
# states in N threads, with the probe, with their own schemas and with the
# sink; the line sink with readers that exit, stall or read slowly), then
# the specs that drive them and the sink's writer thread, in build/lua_host
# (the runtime linked in, so the shells the specs start are not sanitized;
# their Lua children use lua_host too, through PHASEPROBE_LUA). Any report
# fails with exit code 66. Specs tagged nosan are left out (a fork under a
# sanitizer, timing). The helpers' standard error reaches the terminal, a
# report included, except the module's own notices (lines "phaseprobe: ...",
# such as the store being full, which some helpers provoke on purpose).
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
tsan_quiet = $(TSAN_ENV) $(1) 2>$(BUILD)/tsan-stderr; rc=$$?; \
  grep -v '^phaseprobe: ' $(BUILD)/tsan-stderr >&2; exit $$rc
tsan_run = @echo "$(strip $(1))"; $(call tsan_quiet,$(1))
tsan:
	$(MAKE) clean
	$(MAKE) test-build OPT="-O1 -fno-omit-frame-pointer -fsanitize=thread" LDFLAGS="-fsanitize=thread"
	$(call tsan_run,$(BUILD)/threads_helper 8 20000)
	$(call tsan_run,$(BUILD)/threads_helper 8 20000 50000 last)
	$(call tsan_run,$(BUILD)/schema_threads 20000)
	$(call tsan_run,$(BUILD)/multi_state 4 spec/fixtures/scripts/multi_state_probe.lua)
	$(call tsan_run,$(BUILD)/multi_state 3 spec/fixtures/scripts/multi_state_schema.lua)
	$(call tsan_run,$(BUILD)/scopes_helper)
	$(call tsan_run,env -u PHASEPROBE -u VYRE_CUDA_DISPATCH_PHASE_PROBE $(BUILD)/record_helper)
	$(call tsan_run,SINK_PATH=$(BUILD)/tsan-sink.log MULTI_STATE_LINGER_MS=200 \
	  $(BUILD)/multi_state 4 spec/fixtures/scripts/multi_state_sink.lua)
	@for k in pipe socket tcp; do for s in killed stalled slow; do \
	  echo "sink_helper $$k $$s"; ( $(call tsan_quiet,$(BUILD)/sink_helper $$k $$s 4 1000) ) || exit 1; \
	done; done
	$(if $(FAKECUPTI),$(TSAN_ENV) $(BUILD)/cupti_helper $(FAKECUPTI))
	$(TSAN_ENV) PHASEPROBE_LUA=$(CURDIR)/$(BUILD)/lua_host $(BUILD)/lua_host spec/run.lua \
	  --exclude-tags=gpu,nosan spec/reliability_spec.lua spec/sink_spec.lua spec/probe_spec.lua
	$(MAKE) clean

# The non-GPU suite with the interpreter under valgrind memcheck: any error,
# or any definitely lost block, fails. The Lua interpreters the specs start
# run under valgrind too (PHASEPROBE_LUA, spec/helpers/shell.lua), with the
# same options: an error there fails the child with exit code 99, and so
# the spec. Not under valgrind: bin/phaseprobe started as a command, the C
# helpers (build/*_helper, multi_state: ThreadSanitizer's, make tsan) and the
# children that measure memory (their figure would be valgrind's own).
VALGRIND := valgrind --quiet --error-exitcode=99 --leak-check=full \
	  --errors-for-leak-kinds=definite --show-leak-kinds=definite \
	  --suppressions=$(CURDIR)/spec/helpers/valgrind.supp
valgrind: test-build
	PHASEPROBE_LUA="$(VALGRIND) $(LUA)" $(VALGRIND) $(BUSTED) --exclude-tags=gpu,novalgrind spec

bench: $(MODULE) $(BENCH_BINS)
	@for b in bench/*.lua; do case $$b in */rounds.lua|*/gen_log.lua) continue;; esac; \
	  echo "== $$b"; $(LUA) $$b || exit 1; done

demo: demo-deps
	@$(MAKE) --no-print-directory module
	@$(LUA) bin/phaseprobe demo

# The Lua REPL with the module loaded as `pp`, from this checkout (tools/repl).
repl: $(MODULE)
	@LUA=$(LUA) tools/repl

# ---- install ------------------------------------------------------------------
# install-lua: what `luarocks make` installs (the rockspec's install target):
#   $(LIBDIR)/phaseprobe.so, $(LUADIR)/phaseprobe/**.lua, $(BINDIR)/phaseprobe,
#   and the demo's recorded log as $(LUADIR)/phaseprobe/data/demo-h200.log,
#   where the demo finds it beside its modules.
# install-c: what a C runtime builds against:
#   $(INCLUDEDIR)/phaseprobe/*.h (the public headers), $(CLIBDIR)/libphaseprobe.a
#   and $(PKGCONFIGDIR)/phaseprobe.pc, so that
#     cc my_runtime.c $$(pkg-config --cflags --libs phaseprobe)
#   builds. With the CUDA headers found, the library holds the CUDA layer
#   (pp_cuda.h) and the .pc file names their directory in its Cflags.
LUA_FILES  := $(shell cd lua && find phaseprobe -name '*.lua' | LC_ALL=C sort)
DEMO_LOG   := examples/data/demo-h200.log
# pp_cuda.h (which needs cuda.h) only when the library holds the CUDA layer.
PUB_HDRS   := $(filter-out $(if $(filter -DPP_HAVE_CUDA_H,$(CPPFLAGS)),,csrc/include/pp_cuda.h), \
                $(wildcard csrc/include/*.h))
PC_CFLAGS  := -I$${includedir}/phaseprobe$(if $(filter -DPP_HAVE_CUDA_H,$(CPPFLAGS)), -I$(CUDA_HOME)/include)

install: install-lua install-c

install-lua: $(MODULE)
	@$(say) INST "$(MODULE), the Lua side, the command and the demo log under $(DESTDIR)$(PREFIX)"
	$(Q)install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LUADIR)/phaseprobe/data
	$(Q)install -m 755 $(MODULE) $(DESTDIR)$(LIBDIR)/
	$(Q)for f in $(LUA_FILES); do install -D -m 644 lua/$$f $(DESTDIR)$(LUADIR)/$$f || exit 1; done
	$(Q)install -m 644 $(DEMO_LOG) $(DESTDIR)$(LUADIR)/phaseprobe/data/
	$(Q)install -m 755 bin/phaseprobe $(DESTDIR)$(BINDIR)/

install-c: $(STATIC)
	@$(say) INST "headers, libphaseprobe.a and phaseprobe.pc under $(DESTDIR)$(PREFIX)"
	$(Q)install -d $(DESTDIR)$(INCLUDEDIR)/phaseprobe $(DESTDIR)$(CLIBDIR) $(DESTDIR)$(PKGCONFIGDIR)
	$(Q)install -m 644 $(PUB_HDRS) $(DESTDIR)$(INCLUDEDIR)/phaseprobe/
	$(Q)install -m 644 $(STATIC) $(DESTDIR)$(CLIBDIR)/
	$(Q)printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$(INCLUDEDIR)' 'libdir=$(CLIBDIR)' '' \
	  'Name: phaseprobe' \
	  'Description: per-dispatch phase profiler for CUDA driver-API dispatch paths (C probe)' \
	  'Version: $(VERSION)' \
	  'Cflags: $(PC_CFLAGS)' \
	  'Libs: -L$${libdir} -lphaseprobe -ldl -lm -pthread' \
	  > $(DESTDIR)$(PKGCONFIGDIR)/phaseprobe.pc
	$(Q)chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/phaseprobe.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(MODULE) $(DESTDIR)$(BINDIR)/phaseprobe
	rm -rf $(DESTDIR)$(LUADIR)/phaseprobe $(DESTDIR)$(INCLUDEDIR)/phaseprobe
	rm -f $(DESTDIR)$(CLIBDIR)/libphaseprobe.a $(DESTDIR)$(PKGCONFIGDIR)/phaseprobe.pc

# Regenerates the checked-in PTX of examples/kernels/*.cu (needs nvcc).
NVCC ?= $(CUDA_HOME)/bin/nvcc
KERNELS_CU := $(wildcard examples/kernels/*.cu)
# The scanner's fixtures from CUDA: each .cu in release (-O3) and debug (-G)
# PTX, as nvcc gives them.
PTX_FIXTURES_CU := $(wildcard spec/fixtures/ptx/*.cu)
ptx: $(KERNELS_CU:.cu=.ptx) $(PTX_FIXTURES_CU:.cu=.ptx) $(PTX_FIXTURES_CU:.cu=-G.ptx)
examples/kernels/%.ptx: examples/kernels/%.cu
	$(NVCC) -ptx -arch=compute_90 -O3 $< -o $@
spec/fixtures/ptx/%.ptx: spec/fixtures/ptx/%.cu
	$(NVCC) -ptx -arch=compute_90 -O3 $< -o $@
spec/fixtures/ptx/%-G.ptx: spec/fixtures/ptx/%.cu
	$(NVCC) -ptx -arch=compute_90 -G $< -o $@

clean:
	rm -rf $(BUILD) $(MODULE)

# ---- LuaRocks -------------------------------------------------------------------
# `make rock` packs this tree (tracked files, with their changes) as the
# release tarball phaseprobe-$(VERSION).tar.gz and runs `luarocks pack` on the
# rockspec pointed at it: phaseprobe-$(VERSION)-1.src.rock in ROCK_OUT
# (default: here), installable with
#   luarocks --lua-version=5.4 install --deps-mode=none ./phaseprobe-$(VERSION)-1.src.rock
# without reaching any server. The committed rockspec fetches the tagged
# release instead.
ROCKSPEC := phaseprobe-$(VERSION)-1.rockspec
ROCK_DIR := $(BUILD)/rock
ROCK_OUT ?= .
LUAROCKS ?= luarocks
rock:
	@rm -rf $(ROCK_DIR) && mkdir -p $(ROCK_DIR)
	@rev=$$(git stash create 2>/dev/null); git archive --format=tar.gz --prefix=phaseprobe-$(VERSION)/ \
	  -o $(ROCK_DIR)/phaseprobe-$(VERSION).tar.gz $${rev:-HEAD}
	@sed -e 's|^\( *url *= *\).*|\1"file://$(CURDIR)/$(ROCK_DIR)/phaseprobe-$(VERSION).tar.gz",|' \
	  -e '/^ *tag *= /d' \
	  $(ROCKSPEC) > $(ROCK_DIR)/$(ROCKSPEC)
	@cd $(ROCK_DIR) && $(LUAROCKS) --lua-version=5.4 pack $(ROCKSPEC) >/dev/null
	@mv $(ROCK_DIR)/phaseprobe-$(VERSION)-1.src.rock $(ROCK_OUT)/
	@echo "$(ROCK_OUT)/phaseprobe-$(VERSION)-1.src.rock"

# ---- dispatcher and demo (lua/phaseprobe/dispatch/) -------------------------
# The demo through examples/demo.lua, which needs no bin/phaseprobe:
#   make demo-example [DEMO_ARGS="--rounds 10 --log demo.log"]
.PHONY: demo-example demo-record demo-fixture
demo-example: $(MODULE)
	@$(LUA) examples/demo.lua $(DEMO_ARGS)

# On the GPU machine: records the log that the demo reports without a GPU.
demo-record: $(MODULE)
	@mkdir -p examples/data
	$(LUA) examples/demo.lua --log examples/data/demo-h200.log

# Regenerates spec/fixtures/demo-cpu-double.log with the CPU test double
# (host clock readings, no kernels: a fixture for the specs, not GPU data).
demo-fixture: $(MODULE)
	$(LUA) spec/fixtures/make_demo_fixture.lua >/dev/null
# CUPTI headers: optional, and used only with the CUDA headers. The toolkit
# keeps them in extras/CUPTI/include (some layouts put them in include/).
# Without them the module builds and pp.cuda.cupti_available() says why;
# CUPTI=no builds so where the headers are (CI checks that build).
CUPTI ?= auto
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
ifneq ($(CUPTI),no)
  ifneq ($(wildcard $(CUDA_HOME)/extras/CUPTI/include/cupti.h),)
    CPPFLAGS += -DPP_HAVE_CUPTI_H -idirafter $(CUDA_HOME)/extras/CUPTI/include
  else ifneq ($(wildcard $(CUDA_HOME)/include/cupti.h),)
    CPPFLAGS += -DPP_HAVE_CUPTI_H
  endif
endif
endif

# ---- CUDA layer: a fault-injecting fake driver for the non-GPU specs --------
# build/libfakecuda.so stands in for libcuda.so.1 (PHASEPROBE_LIBCUDA) so that
# spec/cuda_fake_spec.lua and spec/cuda_fake_errors_spec.lua can drive the
# driver's paths and its errors without a GPU. It needs the CUDA headers;
# without them those specs report themselves pending.
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
FAKECUDA := $(BUILD)/libfakecuda.so
$(FAKECUDA): spec/helpers/fakecuda.c csrc/include/pp_cuda.h | $(BUILD)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default -shared -o $@ $< $(LDFLAGS)
test-build: $(FAKECUDA)

# The timed window from C (pp_cuda.h); spec/cuda_fake_spec.lua runs it too.
C_CUDA_EXAMPLE := $(BUILD)/c_cuda_window
$(C_CUDA_EXAMPLE): examples/c_cuda_window.c $(STATIC) $(HDRS)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDFLAGS) $(LDLIBS)
test-build: $(C_CUDA_EXAMPLE)
endif

# Ground truth and cost of the probe on a GPU (tools/truth.lua): the event
# pair against CUPTI, starvation against an injected gap, clock drift, and
# the probe's perturbation of a dispatch. TRUTH_OUT=path also writes the
# table to a file. Needs a GPU; the 10 s drift window is the longest part.
.PHONY: truth
truth: $(MODULE)
	$(LUA) tools/truth.lua

# ---- CUPTI source: a scripted fake libcupti and the program that drives
# csrc/cuda/cupti*.c against it (spec/truth_spec.lua). Built without the sanitizer
# flags (it is loaded into sanitized processes, not checked itself).
ifneq ($(filter -DPP_HAVE_CUPTI_H,$(CPPFLAGS)),)
FAKECUPTI := $(BUILD)/libfakecupti.so
$(FAKECUPTI): spec/helpers/fakecupti.c | $(BUILD)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) -O2 -g -fPIC -shared -o $@ $<
$(BUILD)/cupti_helper: spec/helpers/cupti_helper.c spec/helpers/check_cases.h $(STATIC) $(HDRS)
	@$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -fvisibility=default $< -o $@ $(STATIC) $(LDFLAGS) $(LDLIBS)
test-build: $(FAKECUPTI) $(BUILD)/cupti_helper
endif
# Fuzzing under ASan + UBSan, `make fuzz`:
#  - every fuzz/<name>_fuzz.c is a libFuzzer target (clang), linked with the
#    core sources and run for FUZZ_SECONDS seconds (or FUZZ_RUNS executions,
#    -1 for no limit). Seeds: fuzz/corpus/<name>/ when it exists and the
#    directories listed in fuzz/<name>_fuzz.seeds; dictionary:
#    fuzz/<name>_fuzz.dict; the growing corpus and any crash land in
#    fuzz-out/<name>_fuzz/. FUZZ_ARGS passes more libFuzzer flags.
#  - fuzz/lua_api_fuzz.lua drives the whole Lua API (fuzz/lua_api_fuzz.sh):
#    a module built with the sanitizers into build/asan/ (pp.cuda on the
#    fake driver and the CUPTI source on the fake libcupti built there too),
#    one process per seed from FUZZ_LUA_SEED, FUZZ_LUA_CALLS calls each, for
#    FUZZ_SECONDS seconds.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= -1
FUZZ_ARGS    ?=
FUZZ_CFLAGS  := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC     := $(wildcard fuzz/*_fuzz.c)
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_LUA_SEED  ?= 1
FUZZ_LUA_CALLS ?= 100000
SAN_BUILD    := $(BUILD)/asan
SAN_OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined

$(BUILD)/fuzz/%: fuzz/%.c $(CORE_SRC) $(HDRS)
	@mkdir -p $(BUILD)/fuzz
	@$(say) CC $@
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $< $(CORE_SRC) -o $@ $(LDLIBS)

.PHONY: fuzz fuzz-c fuzz-lua san-module
# The module and the fake driver built with ASan + UBSan, beside the plain
# build (for the Lua API fuzzer; load it with LD_PRELOAD of the runtimes).
san-module:
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) MODULE=$(SAN_BUILD)/phaseprobe.so \
	  OPT="$(SAN_OPT)" LDFLAGS="-fsanitize=address,undefined" \
	  $(SAN_BUILD)/phaseprobe.so $(if $(FAKECUDA),$(SAN_BUILD)/libfakecuda.so) \
	  $(if $(FAKECUPTI),$(SAN_BUILD)/libfakecupti.so)

fuzz: fuzz-c fuzz-lua

fuzz-c: $(FUZZ_BIN)
	@set -e; for b in $(FUZZ_BIN); do \
	  n=$$(basename $$b); out=fuzz-out/$$n; mkdir -p $$out/corpus $$out/crashes; \
	  seeds=""; c=fuzz/corpus/$${n%_fuzz}; [ -d $$c ] && seeds=$$c; \
	  [ -f fuzz/$$n.seeds ] && seeds="$$seeds $$(cat fuzz/$$n.seeds)"; \
	  dict=""; [ -f fuzz/$$n.dict ] && dict=-dict=fuzz/$$n.dict; \
	  echo "== $$n: $(FUZZ_SECONDS) s, runs $(FUZZ_RUNS), seeds: $$seeds"; \
	  $$b $$dict -max_total_time=$(FUZZ_SECONDS) -runs=$(FUZZ_RUNS) \
	    -artifact_prefix=$$out/crashes/ -print_final_stats=1 $(FUZZ_ARGS) \
	    $$out/corpus $$seeds; \
	done

# Diagnostics for the GPU machine (tools/gpu_anatomy.c): the device side of a
# dispatch taken apart on one host time axis, and what each step of CUPTI
# collection costs. It links libcuda and libcupti directly, so it is built
# only when asked for:  make anatomy  (then build/gpu_anatomy window|factors|cupti).
.PHONY: anatomy
anatomy: $(BUILD)/gpu_anatomy
$(BUILD)/gpu_anatomy: tools/gpu_anatomy.c $(STATIC) | $(BUILD)
	$(CC) $(CPPFLAGS) -O2 -g -Wall -Wextra $< $(STATIC) -o $@ \
	  -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/extras/CUPTI/lib64 -L$(CUDA_HOME)/lib \
	  -L$(CUDA_HOME)/lib64/stubs \
	  -Wl,-rpath,$(CUDA_HOME)/lib64:$(CUDA_HOME)/extras/CUPTI/lib64:$(CUDA_HOME)/lib \
	  -lcupti -lcuda -ldl -lm -pthread

fuzz-lua: san-module
	@CC="$(CC)" fuzz/lua_api_fuzz.sh $(FUZZ_SECONDS) $(FUZZ_LUA_SEED) $(FUZZ_LUA_CALLS)

# ---- the truth harness's helpers (tools/truth_module.c) --------------------
# phaseprobe_truth: monotonic time, clock pairs, spins and sleeps for
# tools/truth.lua and spec/truth_spec.lua, on the clock of the loaded
# phaseprobe.so. A module of its own, never installed.
TRUTH_MODULE := $(BUILD)/phaseprobe_truth.so
$(TRUTH_MODULE): tools/truth_module.c | $(BUILD)
	@$(say) LD $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(PP_CFLAGS) -shared -o $@ $< $(LDFLAGS) -ldl
test-build: $(TRUTH_MODULE)
truth: $(TRUTH_MODULE)
