-- vyre_ptx.lua: PTX shaped like the reference's emitted programs (see
-- ../shared/reference/README.md): a module-scope counter global
-- `_vyre_grid_barrier` and, per grid barrier, the marker comment followed by
-- membar.gl, bar.sync 0, a leader-thread atom.global.add.u32 on the counter,
-- a spin loop of ld.volatile.global.u32 until the counter reaches
-- (i+1)*gridSize, bar.sync 0, membar.gl. Between barriers each thread adds 1
-- to its element, so the text is a valid, loadable kernel.
--
--   local gen = require "helpers.vyre_ptx"
--   local text = gen.program{ barriers = 3, name = "main" }
local M = {}

M.header = [[
//
// vyre-shaped program (cooperative grid barriers over a monotonic counter)
//

.version 8.0
.target sm_90
.address_size 64

]]

local function barrier(i)
  return table.concat({
    ("\t// --- grid.sync barrier #%d (monotonic counter, release at (i+1)*gridSize) ---"):format(i),
    "\tmembar.gl;",
    "\tbar.sync 0;",
    ("\t@%%p1 bra $GS%d_JOIN;"):format(i),
    ("\tmul.lo.u32 %%r7, %%r6, %d;"):format(i + 1),
    "\tatom.global.add.u32 %r8, [_vyre_grid_barrier], 1;",
    ("$GS%d_SPIN:"):format(i),
    "\tld.volatile.global.u32 %r9, [_vyre_grid_barrier];",
    "\tsetp.lt.u32 %p2, %r9, %r7;",
    ("\t@%%p2 bra $GS%d_SPIN;"):format(i),
    ("$GS%d_JOIN:"):format(i),
    "\tbar.sync 0;",
    "\tmembar.gl;",
  }, "\n") .. "\n"
end

local function work()
  return table.concat({
    "\tld.global.u32 %r10, [%rd3];",
    "\tadd.s32 %r10, %r10, 1;",
    "\tst.global.u32 [%rd3], %r10;",
  }, "\n") .. "\n"
end

-- The entry alone (no module header); opts.barriers (k), opts.name.
function M.entry(opts)
  local k, name = opts.barriers or 0, opts.name or "main"
  local out = {
    (".visible .entry %s(\n\t.param .u64 %s_param_0,\n\t.param .u32 %s_param_1\n)\n{\n")
      :format(name, name, name),
    "\t.reg .pred %p<3>;\n\t.reg .b32 %r<11>;\n\t.reg .b64 %rd<4>;\n\n",
    ("\tld.param.u64 %%rd1, [%s_param_0];\n"):format(name),
    ("\tld.param.u32 %%r1, [%s_param_1];\n"):format(name),
    "\tmov.u32 %r2, %ctaid.x;\n\tmov.u32 %r3, %ntid.x;\n\tmov.u32 %r4, %tid.x;\n",
    "\tmad.lo.s32 %r5, %r2, %r3, %r4;\n",
    "\tmov.u32 %r6, %nctaid.x;\n",
    "\tsetp.ne.u32 %p1, %r4, 0;\n",
    "\tcvta.to.global.u64 %rd2, %rd1;\n",
    "\tmul.wide.u32 %rd3, %r5, 4;\n",
    "\tadd.s64 %rd3, %rd2, %rd3;\n",
    work(),
  }
  for i = 0, k - 1 do
    out[#out + 1] = barrier(i)
    out[#out + 1] = work()
  end
  out[#out + 1] = "\tret;\n}\n"
  return table.concat(out)
end

-- A whole module: the counter global is declared when there are barriers.
function M.program(opts)
  opts = opts or {}
  local k = opts.barriers or 0
  local g = k > 0 and ".global .align 4 .u32 _vyre_grid_barrier[1];\n\n" or ""
  return M.header .. g .. M.entry(opts)
end

-- Instructions in M.entry{barriers = k}: 14 before the first barrier, 10
-- per barrier (membar, bar, bra, mul, atom, ld, setp, bra, bar, membar)
-- plus 3 of work after each, 1 ret.
function M.instructions(k)
  return 14 + k * 13 + 1
end

return M
