-- phaseprobe.dispatch.lower: the PTX text, its shape, and ptxas's verdict on it.
local P = require "phaseprobe.dispatch.program"
local lower = require "phaseprobe.dispatch.lower"

local CUDA_HOME = os.getenv("CUDA_HOME") or "/usr/local/cuda"
local PTXAS = CUDA_HOME .. "/bin/ptxas"

local function have_ptxas()
  local f = io.open(PTXAS, "r")
  if f then f:close() return true end
  return false
end

-- Assembles `ptx` for sm_90; returns true, or false and ptxas's output.
local function ptxas(ptx)
  local src = os.tmpname()
  local f = assert(io.open(src, "w"))
  f:write(ptx)
  f:close()
  local log = src .. ".log"
  local ok = os.execute(string.format("%s -arch=sm_90 %s -o %s.cubin >%s 2>&1", PTXAS, src, src, log))
  local lf = io.open(log, "r")
  local text = lf and lf:read("a") or ""
  if lf then lf:close() end
  os.remove(src)
  os.remove(src .. ".cubin")
  os.remove(log)
  return ok == true, text
end

local count = require("helpers.text").count

local function lines_after(ptx, marker_line, k)
  local out = {}
  local at = ptx:find(marker_line, 1, true)
  assert(at, "no line " .. marker_line)
  local rest = ptx:sub(at)
  for line in rest:gmatch("[^\n]+") do
    out[#out + 1] = line:gsub("^%s+", "")
    if #out > k then break end
  end
  return out
end

describe("phaseprobe.dispatch.lower", function()
  local plain = P.generate{ nodes = 40, barriers = 0, seed = 3 }
  local barred = P.generate{ nodes = 300, barriers = 3, seed = 3 }

  it("emits entry main with one .u64 parameter per buffer and the params buffer last", function()
    local ptx = lower.ptx(barred)
    assert.truthy(ptx:find(".visible .entry main(", 1, true))
    assert.equal(#barred.buffers + 1, count(ptx, ".param .u64 main_param_"))
    assert.truthy(ptx:find("main_param_" .. #barred.buffers .. "\n)", 1, true))
    assert.falsy(ptx:find("main_param_" .. (#barred.buffers + 1), 1, true))
    -- n comes from the params buffer
    local params_reg = ptx:match("ld%.param%.u64 (%%rd%d+), %[main_param_" .. #barred.buffers .. "%]")
    assert.truthy(ptx:find("ld.global.u32 %r1, [" .. params_reg .. "]", 1, true))
  end)

  it("declares the barrier counter and one marker per barrier, numbered, only when there are barriers", function()
    local ptx = lower.ptx(barred)
    assert.equal(1, count(ptx, ".global .align 4 .u32 _vyre_grid_barrier[1];"))
    assert.equal(3, count(ptx, "grid.sync barrier #"))
    for i = 0, 2 do
      assert.truthy(ptx:find(string.format(
        "// --- grid.sync barrier #%d (monotonic counter, release at %d*gridSize) ---", i, i + 1), 1, true))
    end
    local flat = lower.ptx(plain)
    assert.equal(0, count(flat, "grid.sync barrier #"))
    assert.equal(0, count(flat, "_vyre_grid_barrier"))
  end)

  it("follows each marker with the arrive-and-spin sequence", function()
    local ptx = lower.ptx(barred)
    for i = 0, 2 do
      local l = lines_after(ptx, "grid.sync barrier #" .. i, 12)
      assert.equal("membar.gl;", l[2])
      assert.equal("bar.sync 0;", l[3])
      assert.matches("^@%%p2 bra %$L__bar" .. i .. "_join;$", l[4]) -- only the block leader goes on
      assert.matches("^atom%.global%.add%.u32 %%r%d+, %[_vyre_grid_barrier%], 1;$", l[5])
      assert.matches("^mul%.lo%.u32 %%r%d+, %%r%d+, " .. (i + 1) .. ";$", l[6]) -- (i+1) * gridSize
      assert.equal("$L__bar" .. i .. "_spin:", l[7])
      assert.matches("^ld%.volatile%.global%.u32 %%r%d+, %[_vyre_grid_barrier%];$", l[8])
      assert.matches("^setp%.lt%.u32 %%p3, ", l[9])
      assert.equal("@%p3 bra $L__bar" .. i .. "_spin;", l[10])
      assert.equal("$L__bar" .. i .. "_join:", l[11])
      assert.equal("bar.sync 0;", l[12])
      assert.equal("membar.gl;", l[13])
    end
  end)

  it("is a function of the program: the same text twice, another for one changed constant", function()
    local a = lower.ptx(P.generate{ nodes = 200, barriers = 1, seed = 8 })
    local b = lower.ptx(P.generate{ nodes = 200, barriers = 1, seed = 8 })
    assert.equal(a, b)
    local p1 = P.new{ buffers = { { name = "x", type = "u32", role = "inout" } },
                      body = { P.store("x", P.add(P.load("x"), 1)) } }
    local p2 = P.new{ buffers = { { name = "x", type = "u32", role = "inout" } },
                      body = { P.store("x", P.add(P.load("x"), 2)) } }
    assert.are_not.equal(lower.ptx(p1), lower.ptx(p2))
  end)

  it("keeps every demo shape's PTX within the 300 KB JIT budget", function()
    for _, sh in ipairs(require("phaseprobe.dispatch.demo").SHAPES) do
      local ptx = lower.ptx(P.generate{ nodes = sh.nodes, barriers = sh.barriers, seed = sh.seed })
      assert.is_true(#ptx <= 300000, sh.name .. ": " .. #ptx .. " bytes")
      assert.equal(sh.barriers, count(ptx, "grid.sync barrier #"))
    end
  end)

  describe("accepted by ptxas -arch=sm_90", function()
    local cases = {
      { "a plain u32 program", function() return plain end },
      { "an i32 program with barriers", function() return P.generate{ nodes = 300, barriers = 2, type = "i32" } end },
      { "an f32 program with barriers", function() return P.generate{ nodes = 300, barriers = 3, type = "f32" } end },
      { "every operation and operand form", function()
        return P.new{
          buffers = { { name = "x", type = "u32", role = "input" }, { name = "i", type = "i32", role = "inout" },
                      { name = "f", type = "f32", role = "inout" }, { name = "y", type = "u32", role = "output" } },
          body = {
            P.let("t", P.fma(3, P.load("x", 7), P.gid())),
            P.store("y", P.xor(P.min(P.ref("t"), 5), P.max(9, P.sub(P.ref("t"), P.mul(2, 3))))),
            P.store("i", P.fma(P.load("i"), -2, P.min(P.load("i"), -7))),
            P.store("f", P.fma(P.load("f"), 0.5, P.max(P.load("f"), P.sub(1.5, P.mul(P.load("f"), 2))))),
            P.barrier(),
            P.store("y", 42),
            P.store("f", 1.25),
            P.barrier(),
            P.barrier(),
          },
        }
      end },
    }
    -- the demo's programs, exactly as it generates them
    for _, sh in ipairs(require("phaseprobe.dispatch.demo").SHAPES) do
      cases[#cases + 1] = { string.format("the demo's %s shape (%d nodes, %d barriers)", sh.name, sh.nodes, sh.barriers),
        function()
          return P.generate{ nodes = sh.nodes, barriers = sh.barriers, seed = sh.seed, name = sh.name,
                             fixpoint = sh.fixpoint }
        end }
    end
    for _, case in ipairs(cases) do
      if have_ptxas() then
        it(case[1], function()
          local ok, log = ptxas(lower.ptx(case[2]()))
          assert.is_true(ok, log)
        end)
      else
        pending(case[1] .. " (no ptxas at " .. PTXAS .. ")")
      end
    end

    if have_ptxas() then
      it("and this check can fail: ptxas refuses broken PTX", function()
        local ptx = lower.ptx(plain):gsub("add%.u32", "add.u33", 1)
        assert.is_false((ptxas(ptx)))
      end)
    end
  end)
end)
