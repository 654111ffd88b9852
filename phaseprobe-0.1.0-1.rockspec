-- phaseprobe-0.1.0-1.rockspec: the LuaRocks package (Lua 5.4).
--
-- Builds phaseprobe.so with the Makefile (`make module`) and installs it, the
-- Lua side (lua/phaseprobe/**), the demo's recorded log (as
-- phaseprobe/data/demo-h200.log beside the Lua side) and the command: what
-- `make install-lua` installs without LuaRocks. From a checkout:
--   luarocks --lua-version=5.4 make                       (build and install)
--   make rock   (phaseprobe-0.1.0-1.src.rock from this tree, no server needed)
--   luarocks --lua-version=5.4 install --deps-mode=none ./phaseprobe-0.1.0-1.src.rock
-- --deps-mode=none when lua-cjson comes from Debian, which LuaRocks does
-- not see. xxhash.h is found where LuaRocks looks for headers
-- (XXHASH_DIR=/path or XXHASH_INCDIR=/path/include on the luarocks command
-- line to point elsewhere). The CUDA toolkit headers are optional, which
-- external_dependencies cannot say: they are looked for in $CUDA_HOME
-- (CUDA_HOME=/opt/cuda luarocks ..., default /usr/local/cuda); without them
-- the module is built for analysis only.
rockspec_format = "3.0"
package = "phaseprobe"
version = "0.1.0-1"
source = {
  url = "git+https://github.com/phaseprobe/phaseprobe.git",
  tag = "v0.1.0",
}
description = {
  summary = "Per-dispatch phase profiler for CUDA driver-API dispatch paths",
  detailed = [[
A C core (timing, thread-local accumulation, CUDA event pairs, PTX scanning)
exposed to Lua 5.4 as phaseprobe.so, with record analysis in Lua and the
phaseprobe command. The CUDA driver is loaded at run time: the module
installs and analyses logs on machines without a GPU.]],
  homepage = "https://github.com/phaseprobe/phaseprobe",
  license = "MIT",
}
dependencies = {
  "lua >= 5.4, < 5.5",
  "lua-cjson",           -- the JSON lines and trace exports
}
external_dependencies = {
  XXHASH = { header = "xxhash.h" },  -- the PTX digest (header-only)
}
build = {
  type = "make",
  build_target = "module",
  build_variables = {
    CFLAGS = "$(CFLAGS)",
    LUA_INCDIR = "$(LUA_INCDIR)",
    XXHASH_INCDIR = "$(XXHASH_INCDIR)",
  },
  -- LuaRocks copies the files itself (not `make install-lua`): LuaRocks 3.8
  -- passes a make-type install the paths of the default tree even under
  -- --pack-binary-rock, which then packs an empty rock. Every Lua file of
  -- lua/phaseprobe/ is listed (spec/package_spec.lua checks the list).
  install_pass = false,
  install = {
    lib = { phaseprobe = "phaseprobe.so" },
    bin = { phaseprobe = "bin/phaseprobe" },
    lua = {
      ["phaseprobe.analysis.analyze"] = "lua/phaseprobe/analysis/analyze.lua",
      ["phaseprobe.analysis.compare"] = "lua/phaseprobe/analysis/compare.lua",
      ["phaseprobe.analysis.fit"] = "lua/phaseprobe/analysis/fit.lua",
      ["phaseprobe.analysis.whatif"] = "lua/phaseprobe/analysis/whatif.lua",
      ["phaseprobe.cli.cmd_compare"] = "lua/phaseprobe/cli/cmd_compare.lua",
      ["phaseprobe.cli.cmd_demo"] = "lua/phaseprobe/cli/cmd_demo.lua",
      ["phaseprobe.cli.cmd_export"] = "lua/phaseprobe/cli/cmd_export.lua",
      ["phaseprobe.cli.cmd_fit"] = "lua/phaseprobe/cli/cmd_fit.lua",
      ["phaseprobe.cli.cmd_html"] = "lua/phaseprobe/cli/cmd_html.lua",
      ["phaseprobe.cli.cmd_plot"] = "lua/phaseprobe/cli/cmd_plot.lua",
      ["phaseprobe.cli.cmd_ptx"] = "lua/phaseprobe/cli/cmd_ptx.lua",
      ["phaseprobe.cli.cmd_report"] = "lua/phaseprobe/cli/cmd_report.lua",
      ["phaseprobe.cli.cmd_trace"] = "lua/phaseprobe/cli/cmd_trace.lua",
      ["phaseprobe.cli.cmd_whatif"] = "lua/phaseprobe/cli/cmd_whatif.lua",
      ["phaseprobe.cli.init"] = "lua/phaseprobe/cli/init.lua",
      ["phaseprobe.cli.inputs"] = "lua/phaseprobe/cli/inputs.lua",
      ["phaseprobe.cli.progress"] = "lua/phaseprobe/cli/progress.lua",
      ["phaseprobe.dispatch.demo"] = "lua/phaseprobe/dispatch/demo.lua",
      ["phaseprobe.dispatch.eval"] = "lua/phaseprobe/dispatch/eval.lua",
      ["phaseprobe.dispatch.generate"] = "lua/phaseprobe/dispatch/generate.lua",
      ["phaseprobe.dispatch.init"] = "lua/phaseprobe/dispatch/init.lua",
      ["phaseprobe.dispatch.lower"] = "lua/phaseprobe/dispatch/lower.lua",
      ["phaseprobe.dispatch.program"] = "lua/phaseprobe/dispatch/program.lua",
      ["phaseprobe.output.analyses"] = "lua/phaseprobe/output/analyses.lua",
      ["phaseprobe.output.csv"] = "lua/phaseprobe/output/csv.lua",
      ["phaseprobe.output.export"] = "lua/phaseprobe/output/export.lua",
      ["phaseprobe.output.files"] = "lua/phaseprobe/output/files.lua",
      ["phaseprobe.output.html"] = "lua/phaseprobe/output/html.lua",
      ["phaseprobe.output.json"] = "lua/phaseprobe/output/json.lua",
      ["phaseprobe.output.points"] = "lua/phaseprobe/output/points.lua",
      ["phaseprobe.output.report"] = "lua/phaseprobe/output/report.lua",
      ["phaseprobe.output.svg"] = "lua/phaseprobe/output/svg.lua",
      ["phaseprobe.output.trace"] = "lua/phaseprobe/output/trace.lua",
      ["phaseprobe.output.trace_events"] = "lua/phaseprobe/output/trace_events.lua",
      ["phaseprobe.record"] = "lua/phaseprobe/record.lua",
      ["phaseprobe.records"] = "lua/phaseprobe/records.lua",
      -- the demo's recorded log, where the demo looks beside its modules
      ["phaseprobe.data.demo-h200"] = "examples/data/demo-h200.log",
    },
  },
}
-- The command is installed as it is, not wrapped in a script that loads
-- luarocks.loader first (7 ms a start): it finds its modules relative to its
-- own path in the tree it is installed in.
deploy = { wrap_bin_scripts = false }
test = {
  type = "command",
  command = "make test",   -- the non-GPU specs (make test-gpu on a GPU machine)
}
