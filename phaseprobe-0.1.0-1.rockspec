package = "phaseprobe"
version = "0.1.0-1"
source = { url = "git+file:///phaseprobe" }
description = {
  summary = "Per-dispatch phase profiler for CUDA driver-API dispatch paths",
  detailed = [[
A C core (timing, thread-local accumulation, CUDA event pairs, PTX scanning)
exposed to Lua 5.4 as phaseprobe.so, with record analysis in Lua and the
phaseprobe command.]],
  license = "MIT",
}
dependencies = { "lua >= 5.4, < 5.5" }
build = {
  type = "make",
  build_variables = {
    LUA_INCDIR = "$(LUA_INCDIR)",
    CFLAGS = "$(CFLAGS)",
  },
  install_variables = {
    LIBDIR = "$(LIBDIR)",
    LUADIR = "$(LUADIR)",
    BINDIR = "$(BINDIR)",
  },
}
