-- phaseprobe.dispatch.lower: a program (phaseprobe.dispatch.program) to PTX text.
--
--   local ptx = require("phaseprobe.dispatch.lower").ptx(prog)
--
-- The module has the shape of the reference's output: one entry `main` with
-- one .u64 parameter per buffer (declaration order) and a last one for the
-- params buffer (u32 words: [0] = n, the element count); with grid
-- barriers, the module-scope arrival counter
--     .global .align 4 .u32 _vyre_grid_barrier[1];
-- and per barrier i the marker comment
--     // --- grid.sync barrier #i (monotonic counter, release at (i+1)*gridSize) ---
-- (with i and i+1 written out) followed by the arrive-and-spin sequence:
-- membar.gl, bar.sync 0, the block leader's atom.global.add.u32 on the
-- counter, a spin of ld.volatile.global.u32 until the counter reaches
-- (i+1) * gridSize, bar.sync 0, membar.gl. gridSize is the number of blocks;
-- the host resets the counter before each launch, so after a launch it holds
-- barriers x blocks arrivals. Such a module must be launched cooperatively
-- (all blocks co-resident) or the spin never ends.
--
-- Threads with gid >= n skip every stage but still arrive at every barrier.
--
-- Where it sits: the dispatcher (phaseprobe.dispatch) calls it in its ptx
-- phase for programs of phaseprobe.dispatch.program; the probe times it.
local P = require "phaseprobe.dispatch.program"

local M = {}

M.TARGET = "sm_90"
M.VERSION = "8.0"
M.COUNTER = "_vyre_grid_barrier"
M.MARKER = "grid.sync barrier #"
-- Part of every PTX cache key: bump when the emitted text changes.
M.LOWERING_VERSION = 1

local OP = P.OP
local U32, I32, F32 = P.TYPES.u32, P.TYPES.i32, P.TYPES.f32

local INSTR = {
  [U32] = { add = "add.u32", sub = "sub.u32", mul = "mul.lo.u32", fma = "mad.lo.u32",
            min = "min.u32", max = "max.u32", xor = "xor.b32" },
  [I32] = { add = "add.s32", sub = "sub.s32", mul = "mul.lo.s32", fma = "mad.lo.s32",
            min = "min.s32", max = "max.s32", xor = "xor.b32" },
  -- explicit rounding: ptxas does not contract these into fma
  [F32] = { add = "add.rn.f32", sub = "sub.rn.f32", mul = "mul.rn.f32", fma = "fma.rn.f32",
            min = "min.f32", max = "max.f32" },
}
local LDST = { [U32] = "u32", [I32] = "s32", [F32] = "f32" }

local function immediate(ty, v)
  if ty == F32 then
    return string.format("0f%08X", P.f32_bits(v))
  end
  return string.format("%d", v)
end

--- lower.ptx(prog) -> PTX text (string).
function M.ptx(prog)
  local out, no = {}, 0
  local function emit(s)
    no = no + 1
    out[no] = s
  end
  local nr, nf, nrd = 0, 0, 0
  local function r32() nr = nr + 1; return "%r" .. nr end
  local function f32r() nf = nf + 1; return "%f" .. nf end
  local function r64() nrd = nrd + 1; return "%rd" .. nrd end

  local nb = #prog.buffers
  local barriers = prog.barriers

  -- prologue: buffer bases, n, gid, the range predicate
  local base = {}
  for i = 1, nb do
    local rd = r64()
    base[i] = rd
    emit(string.format("\tld.param.u64 %s, [main_param_%d];", rd, i - 1))
    emit(string.format("\tcvta.to.global.u64 %s, %s;", rd, rd))
  end
  local params = r64()
  emit(string.format("\tld.param.u64 %s, [main_param_%d];", params, nb))
  emit(string.format("\tcvta.to.global.u64 %s, %s;", params, params))
  local n = r32()
  emit(string.format("\tld.global.u32 %s, [%s];", n, params))
  local ctaid, ntid, tid, gid = r32(), r32(), r32(), r32()
  emit(string.format("\tmov.u32 %s, %%ctaid.x;", ctaid))
  emit(string.format("\tmov.u32 %s, %%ntid.x;", ntid))
  emit(string.format("\tmov.u32 %s, %%tid.x;", tid))
  emit(string.format("\tmad.lo.s32 %s, %s, %s, %s;", gid, ctaid, ntid, tid))
  emit(string.format("\tsetp.ge.u32 %%p1, %s, %s;", gid, n))
  local off0 = r64()
  emit(string.format("\tmul.wide.u32 %s, %s, 4;", off0, gid))

  -- barrier scratch: leader predicate, grid size, counter values
  local blocks, arrived, seen, target
  if barriers > 0 then
    local t1, t2 = r32(), r32()
    emit(string.format("\tmov.u32 %s, %%tid.y;", t1))
    emit(string.format("\tor.b32 %s, %s, %s;", t1, t1, tid))
    emit(string.format("\tmov.u32 %s, %%tid.z;", t2))
    emit(string.format("\tor.b32 %s, %s, %s;", t1, t1, t2))
    emit(string.format("\tsetp.ne.u32 %%p2, %s, 0;", t1))
    blocks = r32()
    emit(string.format("\tmov.u32 %s, %%nctaid.x;", blocks))
    emit(string.format("\tmov.u32 %s, %%nctaid.y;", t2))
    emit(string.format("\tmul.lo.u32 %s, %s, %s;", blocks, blocks, t2))
    emit(string.format("\tmov.u32 %s, %%nctaid.z;", t2))
    emit(string.format("\tmul.lo.u32 %s, %s, %s;", blocks, blocks, t2))
    arrived, seen, target = r32(), r32(), r32()
  end

  -- element addresses, computed on first use and reused
  local offsets = { [0] = off0 } -- shift -> byte offset register
  local addrs = {}              -- (buffer, shift) -> address register
  local function address(bi, shift)
    local k = bi * 0x100000000 + shift
    local a = addrs[k]
    if a then return a end
    local off = offsets[shift]
    if not off then
      local idx = r32()
      emit(string.format("\tadd.u32 %s, %s, %d;", idx, gid, shift))
      emit(string.format("\trem.u32 %s, %s, %s;", idx, idx, n))
      off = r64()
      emit(string.format("\tmul.wide.u32 %s, %s, 4;", off, idx))
      offsets[shift] = off
    end
    a = r64()
    emit(string.format("\tadd.s64 %s, %s, %s;", a, base[bi], off))
    addrs[k] = a
    return a
  end

  local op, ty, a, b, c, buf, imm = prog.op, prog.ty, prog.a, prog.b, prog.c, prog.buf, prog.imm
  local val = {} -- node -> register or immediate text
  local LOAD, CONST, GID, REF, LET, STORE, BARRIER =
    OP.load, OP.const, OP.gid, OP.ref, OP.let, OP.store, OP.barrier
  local opnames = P.OP_NAMES
  local stage, bar = 0, 0

  emit(string.format("\t@%%p1 bra $L__stage%d_end;", stage))
  for i = 1, prog.nodes do
    local o = op[i]
    local t = ty[i]
    if o == LOAD then
      local addr = address(buf[i], imm[i])
      local rg = t == F32 and f32r() or r32()
      emit(string.format("\tld.global.%s %s, [%s];", LDST[t], rg, addr))
      val[i] = rg
    elseif o == CONST then
      val[i] = immediate(t, imm[i])
    elseif o == GID then
      val[i] = gid
    elseif o == REF or o == LET then
      val[i] = val[o == REF and imm[i] or a[i]]
    elseif o == STORE then
      local addr = address(buf[i], 0)
      emit(string.format("\tst.global.%s [%s], %s;", LDST[t], addr, val[a[i]]))
    elseif o == BARRIER then
      emit(string.format("$L__stage%d_end:", stage))
      emit(string.format("\t// --- grid.sync barrier #%d (monotonic counter, release at %d*gridSize) ---",
        bar, bar + 1))
      emit("\tmembar.gl;")
      emit("\tbar.sync 0;")
      emit(string.format("\t@%%p2 bra $L__bar%d_join;", bar))
      emit(string.format("\tatom.global.add.u32 %s, [%s], 1;", arrived, M.COUNTER))
      emit(string.format("\tmul.lo.u32 %s, %s, %d;", target, blocks, bar + 1))
      emit(string.format("$L__bar%d_spin:", bar))
      emit(string.format("\tld.volatile.global.u32 %s, [%s];", seen, M.COUNTER))
      emit(string.format("\tsetp.lt.u32 %%p3, %s, %s;", seen, target))
      emit(string.format("\t@%%p3 bra $L__bar%d_spin;", bar))
      emit(string.format("$L__bar%d_join:", bar))
      emit("\tbar.sync 0;")
      emit("\tmembar.gl;")
      bar = bar + 1
      stage = stage + 1
      emit(string.format("\t@%%p1 bra $L__stage%d_end;", stage))
    else
      local rg = t == F32 and f32r() or r32()
      local instr = INSTR[t][opnames[o]]
      if o == OP.fma then
        emit(string.format("\t%s %s, %s, %s, %s;", instr, rg, val[a[i]], val[b[i]], val[c[i]]))
      else
        emit(string.format("\t%s %s, %s, %s;", instr, rg, val[a[i]], val[b[i]]))
      end
      val[i] = rg
    end
  end
  emit(string.format("$L__stage%d_end:", stage))
  emit("\tret;")
  emit("}")

  local head = {
    "//",
    string.format("// phaseprobe.dispatch.lower v%d: %d nodes, %d buffers, %d grid barriers",
      M.LOWERING_VERSION, prog.nodes, nb, barriers),
    "//",
    "",
    ".version " .. M.VERSION,
    ".target " .. M.TARGET,
    ".address_size 64",
    "",
  }
  if barriers > 0 then
    head[#head + 1] = string.format(".global .align 4 .u32 %s[1];", M.COUNTER)
    head[#head + 1] = ""
  end
  head[#head + 1] = ".visible .entry main("
  for i = 0, nb do
    head[#head + 1] = string.format("\t.param .u64 main_param_%d%s", i, i < nb and "," or "")
  end
  head[#head + 1] = ")"
  head[#head + 1] = "{"
  head[#head + 1] = "\t.reg .pred %p<4>;"
  head[#head + 1] = string.format("\t.reg .b32 %%r<%d>;", nr + 1)
  if nf > 0 then
    head[#head + 1] = string.format("\t.reg .f32 %%f<%d>;", nf + 1)
  end
  head[#head + 1] = string.format("\t.reg .b64 %%rd<%d>;", nrd + 1)
  head[#head + 1] = ""
  return table.concat(head, "\n") .. "\n" .. table.concat(out, "\n", 1, no) .. "\n"
end

return M
