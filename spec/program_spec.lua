-- phaseprobe.dispatch.program: construction, validation, the generator and the CPU
-- evaluation.
local P = require "phaseprobe.dispatch.program"

local function buffers(list)
  local out = {}
  for i, spec in ipairs(list) do
    local name, ty, role = spec:match("^(%w+):(%w+):(%w+)$")
    out[i] = { name = name, type = ty, role = role }
  end
  return out
end

local function prog(body, bufs, extra)
  local d = { name = "t", buffers = buffers(bufs or { "x:u32:input", "y:u32:output" }), body = body }
  for k, v in pairs(extra or {}) do d[k] = v end
  return P.new(d)
end

local function iota(n, f)
  local t = {}
  for i = 1, n do t[i] = f and f(i - 1) or (i - 1) end
  return t
end

describe("phaseprobe.dispatch.program construction", function()
  it("flattens the body into post-order nodes and counts every node", function()
    -- store(y, add(load x, 3)): load, const, add, store
    local p = prog{ P.store("y", P.add(P.load("x"), 3)) }
    assert.equal(4, p.nodes)
    assert.same({ P.OP.load, P.OP.const, P.OP.add, P.OP.store }, { p.op[1], p.op[2], p.op[3], p.op[4] })
    assert.equal(1, p.a[3])
    assert.equal(2, p.b[3])
    assert.equal(3, p.a[4])
    assert.equal(3, p.imm[2])
    assert.equal(0, p.barriers)
    assert.equal(1, p.stages)
  end)

  it("counts lets, refs and barriers as nodes", function()
    local p = prog({
      P.let("t", P.load("x")),
      P.barrier(),
      P.store("y", P.mul(P.ref("t"), P.ref("t"))),
    })
    -- load, let, barrier, ref, ref, mul, store
    assert.equal(7, p.nodes)
    assert.equal(1, p.barriers)
    assert.equal(2, p.stages)
  end)

  it("infers the type of untyped constants from their context", function()
    local p = prog({ P.store("y", P.add(3, P.load("x"))) }, { "x:f32:input", "y:f32:output" })
    assert.equal(P.TYPES.f32, p.ty[1])
    assert.equal(P.f32_bits(3.0), p.key[1])
  end)

  it("names the program and the path of a bad entry", function()
    local ok, err = pcall(prog, { P.store("y", P.add(P.load("x"), P.load("z"))) })
    assert.is_false(ok)
    assert.equal("program 't': body[1].value[2]: load of unknown buffer 'z' (buffers: x, y)", err)
  end)

  local refusals = {
    { "a store to an input buffer", { P.store("x", P.load("x")) }, nil, "body%[1%]: store to 'x', whose role is input" },
    { "an unknown statement", { { op = "jump" } }, nil, "unknown statement 'jump'" },
    { "an expression as a statement", { P.load("x") }, nil, "unknown statement 'load'" },
    { "a statement as an expression", { P.store("y", P.barrier()) }, nil, "'barrier' is a statement" },
    { "an unknown operation", { P.store("y", { op = "div", 1, 2 }) }, nil, "unknown operation 'div'" },
    { "a missing operand", { P.store("y", { op = "add", P.load("x") }) }, nil, "add needs 2 operands, operand 2" },
    { "an extra operand", { P.store("y", { op = "add", 1, 2, 3 }) }, nil, "add takes 2 operands" },
    { "a reference before its let", { P.store("y", P.ref("t")), P.let("t", P.load("x")) }, nil,
      "reference to 't', which no earlier let defines" },
    { "a let defined twice", { P.let("t", P.load("x")), P.let("t", P.load("x")) }, nil, "'t' is defined twice" },
    { "an untyped let", { P.let("t", P.add(1, 2)) }, nil, "cannot infer the type of 't'" },
    { "a type mismatch", { P.store("y", P.load("x")) }, { "x:f32:input", "y:u32:output" },
      "load of 'x' %(f32%) where u32 is expected" },
    { "xor on f32", { P.store("y", P.xor(P.load("x"), P.load("x"))) }, { "x:f32:input", "y:f32:output" },
      "xor is defined on u32 and i32" },
    { "gid as f32", { P.store("y", P.gid()) }, { "x:f32:input", "y:f32:output" }, "gid is an integer" },
    { "a negative shift", { P.store("y", P.load("x", -1)) }, nil, "shift %-1 of load 'x' must be an integer" },
    { "a u32 constant out of range", { P.store("y", P.add(P.load("x"), 0x100000000)) }, nil,
      "constant 4294967296 is outside u32" },
    { "an i32 constant out of range", { P.store("y", P.add(P.load("x"), 0x80000000)) },
      { "x:i32:input", "y:i32:output" }, "constant 2147483648 is outside i32" },
    { "a fractional integer constant", { P.store("y", P.add(P.load("x"), 1.5)) }, nil, "constant 1.5 is not an integer" },
  }
  for _, case in ipairs(refusals) do
    it("refuses " .. case[1], function()
      local ok, err = pcall(prog, case[2], case[3])
      assert.is_false(ok)
      assert.matches(case[4], err)
      assert.matches("^program 't': ", err)
    end)
  end

  it("refuses bad buffer declarations and fixpoints", function()
    local function new(d) return pcall(P.new, d) end
    local body = { P.store("y", P.load("x")) }
    local ok, err = new{ name = "b", buffers = {}, body = body }
    assert.is_false(ok); assert.matches("buffers: a program needs a list of at least one buffer", err)
    ok, err = new{ name = "b", buffers = buffers{ "x:u32:input", "x:u32:output" }, body = body }
    assert.is_false(ok); assert.matches("buffers%[2%]: buffer 'x' is declared twice", err)
    ok, err = new{ name = "b", buffers = { { name = "x", type = "u64", role = "input" } }, body = body }
    assert.is_false(ok); assert.matches("unknown type 'u64'", err)
    ok, err = new{ name = "b", buffers = { { name = "x", type = "u32", role = "scratch" } }, body = body }
    assert.is_false(ok); assert.matches("unknown role 'scratch'", err)
    ok, err = new{ name = "b", buffers = buffers{ "x:u32:input", "y:u32:output" }, body = body, fixpoint = 0 }
    assert.is_false(ok); assert.matches("fixpoint: must be a positive integer", err)
    ok, err = new{ name = "b", buffers = buffers{ "x:u32:input", "y:u32:output" }, body = {} }
    assert.is_false(ok); assert.matches("body: a program needs", err)
    -- the messages name the module by its name
    ok, err = new(5)
    assert.is_false(ok); assert.matches("phaseprobe%.dispatch%.program%.new: expected a description table", err)
  end)
end)

describe("phaseprobe.dispatch.program validation", function()
  it("refuses a shifted load of a buffer stored in the same stage, naming stage and nodes", function()
    local ok, err = pcall(prog, {
      P.store("y", P.load("x")),
      P.store("y", P.add(P.load("y", 5), 1)),
    })
    assert.is_false(ok)
    assert.matches("stage 0: node %d+ loads 'y' at shift 5 and node %d+ stores 'y' in the same stage", err)
  end)

  it("accepts the same accesses separated by a grid barrier, and shift-0 reads of a stored buffer", function()
    local p = prog({
      P.store("y", P.load("x")),
      P.store("y", P.add(P.load("y"), 1)), -- own element: no race
      P.barrier(),
      P.store("z", P.load("y", 5)),
    }, { "x:u32:input", "y:u32:output", "z:u32:output" })
    assert.equal(1, p.barriers)
  end)

  it("returns the distinct accesses per stage as (stage, buffer, shift, kind)", function()
    local p = prog({
      P.store("y", P.add(P.load("x", 3), P.load("x", 3))),
      P.barrier(),
      P.store("y", P.load("x")),
    })
    assert.same({ 0, 1, 3, 1, 0, 2, 0, 2, 1, 1, 0, 1, 1, 2, 0, 2 }, p:validate())
  end)
end)

describe("phaseprobe.dispatch.program evaluation", function()
  it("wraps u32 arithmetic modulo 2^32", function()
    local p = prog({
      P.store("a", P.add(P.load("x"), 1)),
      P.store("b", P.mul(P.load("x"), 0x10001)),
      P.store("c", P.sub(0, P.load("x"))),
      P.store("d", P.fma(P.load("x"), P.load("x"), 7)),
    }, { "x:u32:input", "a:u32:output", "b:u32:output", "c:u32:output", "d:u32:output" })
    local out = p:evaluate({ x = { 0xFFFFFFFF, 2 } }, 2)
    assert.same({ 0, 3 }, out.a)
    assert.same({ (0xFFFFFFFF * 0x10001) & 0xFFFFFFFF, 0x20002 }, out.b)
    assert.same({ 1, 0xFFFFFFFE }, out.c)
    assert.same({ (0xFFFFFFFF * 0xFFFFFFFF + 7) & 0xFFFFFFFF, 11 }, out.d)
  end)

  it("wraps i32 arithmetic into the signed range and compares signed", function()
    local p = prog({
      P.store("a", P.add(P.load("x"), 1)),
      P.store("b", P.min(P.load("x"), 0)),
      P.store("c", P.xor(P.load("x"), -1)),
    }, { "x:i32:input", "a:i32:output", "b:i32:output", "c:i32:output" })
    local out = p:evaluate({ x = { 0x7FFFFFFF, -5 } }, 2)
    assert.same({ -0x80000000, -4 }, out.a)
    assert.same({ 0, -5 }, out.b)
    assert.same({ -0x80000000, 4 }, out.c)
  end)

  it("rounds f32 results to binary32 and follows PTX min/max on NaN", function()
    local p = prog({
      P.store("a", P.add(P.load("x"), 2 ^ -24)),
      P.store("b", P.min(P.load("x"), P.load("n"))),
      P.store("c", P.max(P.load("n"), P.load("x"))),
    }, { "x:f32:input", "n:f32:input", "a:f32:output", "b:f32:output", "c:f32:output" })
    local nan = 0 / 0
    local out = p:evaluate({ x = { 1.0, 0.1 }, n = { nan, nan } }, 2)
    assert.equal(1.0, out.a[1]) -- 1 + 2^-24 ties to even: 1
    assert.equal(P.f32(P.f32(0.1) + 2 ^ -24), out.a[2])
    assert.are_not.equal(0.1, out.b[2]) -- inputs are rounded to f32 first
    assert.equal(P.f32(0.1), out.b[2])
    assert.same({ 1.0, P.f32(0.1) }, out.c)
  end)

  it("reads across elements at a shift, modulo n, after a barrier", function()
    local p = prog({
      P.store("y", P.mul(P.load("x"), 10)),
      P.barrier(),
      P.store("z", P.load("y", 1)),
    }, { "x:u32:input", "y:u32:output", "z:u32:output" })
    local out = p:evaluate({ x = { 1, 2, 3, 4 } }, 4)
    assert.same({ 20, 30, 40, 10 }, out.z)
  end)

  it("runs the body fixpoint times, carrying inout and output contents", function()
    local p = prog({
      P.store("s", P.add(P.load("s"), P.load("x"))),
      P.store("y", P.add(P.load("y"), 1)),
    }, { "x:u32:input", "s:u32:inout", "y:u32:output" }, { fixpoint = 3 })
    local out = p:evaluate({ x = { 5, 7 }, s = { 100, 200 } }, 2)
    assert.same({ 115, 221 }, out.s)
    assert.same({ 3, 3 }, out.y) -- outputs start at zero, once per dispatch
    assert.same({ 105, 207 }, p:evaluate({ x = { 5, 7 }, s = { 100, 200 } }, 2, 1).s)
  end)

  it("keeps a let's value when its buffer is stored afterwards", function()
    local p = prog({
      P.let("old", P.load("s")),
      P.store("s", P.add(P.load("s"), 1)),
      P.store("y", P.ref("old")),
    }, { "s:u32:inout", "y:u32:output" })
    local out = p:evaluate({ s = { 9 } }, 1)
    assert.same({ 10 }, out.s)
    assert.same({ 9 }, out.y)
  end)

  it("uses gid as the element index", function()
    local p = prog({ P.store("y", P.add(P.gid(), P.load("x"))) })
    assert.same({ 10, 11, 12 }, p:evaluate({ x = { 10, 10, 10 } }, 3).y)
  end)

  it("refuses missing, short and out-of-range inputs", function()
    local p = prog{ P.store("y", P.load("x")) }
    local ok, err = pcall(p.evaluate, p, {}, 2)
    assert.is_false(ok); assert.matches("no data for input buffer 'x'", err)
    ok, err = pcall(p.evaluate, p, { x = { 1 } }, 2)
    assert.is_false(ok); assert.matches("input 'x' has 1 element, expected n = 2", err)
    ok, err = pcall(p.evaluate, p, { x = { 1, -1 } }, 2)
    assert.is_false(ok); assert.matches("input 'x'%[2%] = %-1 is not a u32 value", err)
  end)
end)

describe("phaseprobe.dispatch.program.compare", function()
  local p = prog({ P.store("y", P.load("x")) }, { "x:f32:input", "y:f32:output" })
  local q = prog{ P.store("y", P.load("x")) }

  it("reports the first differing element of an integer buffer", function()
    local ok, msg = P.compare(q, { y = { 1, 2, 4 } }, { y = { 1, 2, 3 } })
    assert.is_false(ok)
    assert.equal("buffer 'y': 1 of 3 elements differ; first at gid 2: got 4, expected 3", msg)
    assert.is_true(P.compare(q, { y = { 1, 2, 3 } }, { y = { 1, 2, 3 } }))
  end)

  it("compares f32 within a relative tolerance and NaN with NaN", function()
    assert.is_true(P.compare(p, { y = { 1.0, 0 / 0 } }, { y = { 1.0 + 1e-7, 0 / 0 } }))
    assert.is_false(P.compare(p, { y = { 1.0, 0 / 0 } }, { y = { 1.001, 0 / 0 } }))
    assert.is_false((P.compare(p, { y = { 1.0, 0 / 0 } }, { y = { 1.0, 1.0 } })))
  end)

  it("fails when a buffer was not read back", function()
    local ok, msg = P.compare(q, {}, { y = { 1 } })
    assert.is_false(ok)
    assert.equal("buffer 'y' was not read back", msg)
  end)
end)

describe("phaseprobe.dispatch.program.generate", function()
  it("makes programs of exactly the requested size, from a few nodes to 10,000", function()
    for _, b in ipairs{ 0, 1, 3 } do
      local lo = 4 * (b + 1) + 4 + b
      for nodes = lo, lo + 60 do
        local p = P.generate{ nodes = nodes, barriers = b, seed = nodes }
        assert.equal(nodes, p.nodes)
        assert.equal(b, p.barriers)
      end
    end
    local big = P.generate{ nodes = 10000, barriers = 6 }
    assert.equal(10000, big.nodes)
    assert.equal(6, big.barriers)
  end)

  it("is deterministic for a seed and differs between seeds", function()
    local a = P.generate{ nodes = 200, barriers = 2, seed = 4 }
    local b = P.generate{ nodes = 200, barriers = 2, seed = 4 }
    local c = P.generate{ nodes = 200, barriers = 2, seed = 5 }
    assert.same(a.op, b.op)
    assert.same(a.imm, b.imm)
    assert.are_not.same(a.imm, c.imm)
  end)

  it("carries data across blocks through every barrier", function()
    local p = P.generate{ nodes = 400, barriers = 3, seed = 2 }
    local crossing = 0
    local stage = 0
    for i = 1, p.nodes do
      if p.op[i] == P.OP.barrier then stage = stage + 1 end
      if stage > 0 and p.op[i] == P.OP.load and p.imm[i] ~= 0
        and (p.buffers[p.buf[i]].name == "pa" or p.buffers[p.buf[i]].name == "pb") then
        crossing = crossing + 1
      end
    end
    assert.is_true(crossing >= 3)
  end)

  it("produces outputs that are not degenerate", function()
    for _, ty in ipairs{ "u32", "i32", "f32" } do
      local p = P.generate{ nodes = 300, barriers = 2, type = ty, seed = 9 }
      local out = p:evaluate(P.inputs(p, 64, 1), 64, 2)
      local distinct = {}
      local k = 0
      for _, v in ipairs(out.out) do
        if not distinct[v] then distinct[v] = true; k = k + 1 end
      end
      assert.is_true(k > 32, ty .. ": only " .. k .. " distinct values of 64")
    end
  end)

  it("refuses sizes below the minimum for the barrier count", function()
    local ok, err = pcall(P.generate, { nodes = 10, barriers = 3 })
    assert.is_false(ok)
    assert.matches("^phaseprobe%.dispatch%.program%.generate: nodes must be an integer >= 23 for 3 barriers", err)
    assert.matches("^phaseprobe%.dispatch%.program '", tostring(P.generate { nodes = 30 }))
  end)

  it("gives the inputs every input and inout buffer needs, of length n", function()
    local p = P.generate{ nodes = 100, barriers = 1 }
    local inputs = P.inputs(p, 33, 1)
    assert.equal(33, #inputs.in0)
    assert.equal(33, #inputs.in1)
    assert.equal(33, #inputs.state)
    assert.is_nil(inputs.out)
    assert.is_nil(inputs.pa)
    assert.same(inputs.in0, P.inputs(p, 33, 1).in0)
  end)
end)
