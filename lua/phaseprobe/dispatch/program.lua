-- phaseprobe.dispatch.program: small element-wise GPU programs, their validation,
-- a generator of programs of a given size, and a CPU evaluation.
--
--   local P = require "phaseprobe.dispatch.program"
--   local prog = P.new{
--     name = "saxpy",
--     buffers = {
--       { name = "x", type = "u32", role = "input" },
--       { name = "y", type = "u32", role = "inout" },
--     },
--     body = {
--       P.let("t", P.mul(P.load("x"), 3)),
--       P.store("y", P.add(P.ref("t"), P.load("y"))),
--       P.barrier(),
--       P.store("y", P.max(P.load("x", 1), P.load("y"))),
--     },
--     fixpoint = 2,
--   }
--
-- Semantics. One thread per element; the thread with global id `gid`
-- (0-based) runs the body in order. `load(buf, k)` reads element
-- (gid + k) mod n of `buf`, `store(buf, v)` writes element gid. A
-- `barrier()` is a grid-wide barrier: every store before it is visible to
-- every load after it. Within one stage (the statements between barriers) a
-- buffer that is stored may be loaded only at shift 0, or threads would race;
-- validation refuses such programs. The whole body runs `fixpoint` times (one
-- kernel launch each); inout and output buffers carry their contents from one
-- iteration to the next. Element types: u32 and i32 (arithmetic wraps modulo
-- 2^32) and f32 (IEEE binary32, round to nearest even).
--
-- Representation. P.new flattens the body into one post-order node list
-- (children before parents, statements in program order), held as parallel
-- arrays: prog.op[i], prog.ty[i], prog.a[i], prog.b[i], prog.c[i],
-- prog.buf[i], prog.imm[i], prog.key[i]. `prog.nodes` is the list's length:
-- every statement, expression, constant and barrier is one node. Programs
-- are values: do not modify one after P.new (caches key on identity).
local M = {}

-- ---- codes ----------------------------------------------------------------
local TYPES = { u32 = 1, i32 = 2, f32 = 3 }
local TYPE_NAMES = { "u32", "i32", "f32" }
M.TYPES, M.TYPE_NAMES = TYPES, TYPE_NAMES

local ROLES = { input = 1, output = 2, inout = 3 }
local ROLE_NAMES = { "input", "output", "inout" }
M.ROLES, M.ROLE_NAMES = ROLES, ROLE_NAMES

local OP = {
  load = 1, const = 2, gid = 3, ref = 4,
  add = 5, sub = 6, mul = 7, fma = 8, min = 9, max = 10, xor = 11,
  let = 20, store = 21, barrier = 22,
}
local OP_NAMES = {}
for k, v in pairs(OP) do OP_NAMES[v] = k end
M.OP, M.OP_NAMES = OP, OP_NAMES

-- operand count of each arithmetic op
local ARITY = { add = 2, sub = 2, mul = 2, min = 2, max = 2, xor = 2, fma = 3 }
M.ARITY = ARITY

local MAX_SHIFT = 0x7FFFFFFF
local MAX_BUFFERS = 64
M.MAX_SHIFT = MAX_SHIFT

-- ---- f32 helpers --------------------------------------------------------
local spack, sunpack = string.pack, string.unpack

-- Rounds a Lua number to the nearest binary32 value (ties to even).
local function f32(x)
  return (sunpack("<f", spack("<f", x)))
end
M.f32 = f32

local function f32_bits(x)
  return (sunpack("<I4", spack("<f", x)))
end
M.f32_bits = f32_bits

-- ---- builders -------------------------------------------------------------
-- Plain description tables; P.new checks them. A number where an expression
-- is expected is a constant whose type is inferred from its context.
function M.load(buf, shift) return { op = "load", buf = buf, shift = shift } end
function M.const(value, ty) return { op = "const", value = value, type = ty } end
function M.gid() return { op = "gid" } end
function M.ref(name) return { op = "ref", name = name } end
for name, n in pairs(ARITY) do
  if n == 2 then
    M[name] = function(a, b) return { op = name, a, b } end
  else
    M[name] = function(a, b, c) return { op = name, a, b, c } end
  end
end
function M.let(name, value, ty) return { op = "let", name = name, value = value, type = ty } end
function M.store(buf, value) return { op = "store", buf = buf, value = value } end
function M.barrier() return { op = "barrier" } end

-- ---- construction ---------------------------------------------------------
local Program = {}
Program.__index = Program
M.Program = Program

local function is_ident(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

-- Builder state for one P.new call.
local function new_builder(name)
  return {
    name = name,
    op = {}, ty = {}, a = {}, b = {}, c = {}, buf = {}, imm = {}, key = {},
    n = 0,
    lets = {},      -- let name -> node index
    let_ty = {},    -- let name -> type code
    barriers = 0,
    buffer_index = {},
    buffers = {},
  }
end

local function fail(B, path, fmt, ...)
  error(string.format("program '%s': %s: " .. fmt, B.name, path, ...), 0)
end

local function push(B, op, ty, a, b, c, buf, imm, key)
  local i = B.n + 1
  B.n = i
  B.op[i], B.ty[i], B.a[i], B.b[i], B.c[i] = op, ty or 0, a or 0, b or 0, c or 0
  B.buf[i], B.imm[i], B.key[i] = buf or 0, imm or 0, key or 0
  return i
end

local function as_expr(e)
  if type(e) == "number" then return { op = "const", value = e } end
  return e
end

-- The type an expression has on its own, or nil when it adopts its context
-- (untyped constants, gid).
local function peek_type(B, e)
  e = as_expr(e)
  if type(e) ~= "table" then return nil end
  local op = e.op
  if op == "load" then
    local bi = B.buffer_index[e.buf]
    return bi and B.buffers[bi].tcode or nil
  elseif op == "const" then
    return e.type and TYPES[e.type] or nil
  elseif op == "ref" then
    return B.let_ty[e.name]
  elseif ARITY[op] then
    for k = 1, ARITY[op] do
      local t = peek_type(B, e[k])
      if t then return t end
    end
  end
  return nil
end

local function check_const(B, path, v, ty)
  if type(v) ~= "number" then
    fail(B, path, "constant must be a number, got %s", type(v))
  end
  if ty == TYPES.f32 then
    return v, f32_bits(v)
  end
  local iv = math.tointeger(v)
  if not iv then
    fail(B, path, "constant %s is not an integer (type %s)", tostring(v), TYPE_NAMES[ty])
  end
  if ty == TYPES.u32 and (iv < 0 or iv > 0xFFFFFFFF) then
    fail(B, path, "constant %d is outside u32 (0 to 4294967295)", iv)
  elseif ty == TYPES.i32 and (iv < -0x80000000 or iv > 0x7FFFFFFF) then
    fail(B, path, "constant %d is outside i32 (-2147483648 to 2147483647)", iv)
  end
  return iv, iv & 0xFFFFFFFF
end

-- Emits expression `e` (children first) with type `ty`; returns its index.
local function emit_expr(B, e, ty, path)
  e = as_expr(e)
  if type(e) ~= "table" then
    fail(B, path, "expected an expression table, got %s", type(e))
  end
  local op = e.op
  if op == "load" then
    local bi = B.buffer_index[e.buf]
    if not bi then
      fail(B, path, "load of unknown buffer '%s' (buffers: %s)", tostring(e.buf), B.buffer_list)
    end
    local bt = B.buffers[bi].tcode
    if ty and bt ~= ty then
      fail(B, path, "load of '%s' (%s) where %s is expected", e.buf, TYPE_NAMES[bt], TYPE_NAMES[ty])
    end
    local shift = e.shift or 0
    local s = math.tointeger(shift)
    if not s or s < 0 or s > MAX_SHIFT then
      fail(B, path, "shift %s of load '%s' must be an integer in [0, %d]", tostring(shift), e.buf, MAX_SHIFT)
    end
    return push(B, OP.load, bt, 0, 0, 0, bi, s, s), bt
  elseif op == "const" then
    local t = ty or (e.type and TYPES[e.type])
    if e.type and not TYPES[e.type] then
      fail(B, path, "unknown constant type '%s' (types: u32, i32, f32)", tostring(e.type))
    end
    if not t then
      fail(B, path, "cannot infer the type of constant %s: give it one, P.const(v, \"u32\")", tostring(e.value))
    end
    if e.type and ty and TYPES[e.type] ~= ty then
      fail(B, path, "constant of type %s where %s is expected", e.type, TYPE_NAMES[ty])
    end
    local v, bits = check_const(B, path, e.value, t)
    return push(B, OP.const, t, 0, 0, 0, 0, v, bits), t
  elseif op == "gid" then
    local t = ty or TYPES.u32
    if t == TYPES.f32 then
      fail(B, path, "gid is an integer (u32 or i32), not f32")
    end
    return push(B, OP.gid, t), t
  elseif op == "ref" then
    local li = B.lets[e.name]
    if not li then
      fail(B, path, "reference to '%s', which no earlier let defines", tostring(e.name))
    end
    local t = B.let_ty[e.name]
    if ty and t ~= ty then
      fail(B, path, "'%s' is %s where %s is expected", e.name, TYPE_NAMES[t], TYPE_NAMES[ty])
    end
    return push(B, OP.ref, t, 0, 0, 0, 0, li, li), t
  elseif ARITY[op] then
    local t = ty or peek_type(B, e)
    if not t then
      fail(B, path, "cannot infer the type of %s (all operands are untyped constants)", op)
    end
    if op == "xor" and t == TYPES.f32 then
      fail(B, path, "xor is defined on u32 and i32, not f32")
    end
    local n = ARITY[op]
    local kids = {}
    for k = 1, n do
      if e[k] == nil then
        fail(B, path, "%s needs %d operands, operand %d is missing", op, n, k)
      end
      kids[k] = emit_expr(B, e[k], t, path .. "[" .. k .. "]")
    end
    if e[n + 1] ~= nil then
      fail(B, path, "%s takes %d operands, got more", op, n)
    end
    return push(B, OP[op], t, kids[1], kids[2], kids[3] or 0), t
  elseif op == "let" or op == "store" or op == "barrier" then
    fail(B, path, "'%s' is a statement, not an expression", op)
  end
  fail(B, path, "unknown operation '%s' (expressions: load, const, gid, ref, add, sub, mul, fma, min, max, xor)", tostring(op))
end

local function emit_stmt(B, s, path)
  if type(s) ~= "table" then
    fail(B, path, "expected a statement table, got %s", type(s))
  end
  local op = s.op
  if op == "store" then
    local bi = B.buffer_index[s.buf]
    if not bi then
      fail(B, path, "store to unknown buffer '%s' (buffers: %s)", tostring(s.buf), B.buffer_list)
    end
    local bd = B.buffers[bi]
    if bd.rcode == ROLES.input then
      fail(B, path, "store to '%s', whose role is input (read-only)", s.buf)
    end
    if s.value == nil then fail(B, path, "store to '%s' has no value", s.buf) end
    local v = emit_expr(B, s.value, bd.tcode, path .. ".value")
    push(B, OP.store, bd.tcode, v, 0, 0, bi, 0, 0)
  elseif op == "let" then
    if not is_ident(s.name) then
      fail(B, path, "let needs a name (an identifier), got %s", tostring(s.name))
    end
    if B.lets[s.name] then
      fail(B, path, "'%s' is defined twice", s.name)
    end
    if s.type ~= nil and not TYPES[s.type] then
      fail(B, path, "unknown type '%s' for let '%s' (types: u32, i32, f32)", tostring(s.type), s.name)
    end
    if s.value == nil then fail(B, path, "let '%s' has no value", s.name) end
    local t = (s.type and TYPES[s.type]) or peek_type(B, s.value)
    if not t then
      fail(B, path, "cannot infer the type of '%s': give the let a type", s.name)
    end
    local v = emit_expr(B, s.value, t, path .. ".value")
    local i = push(B, OP.let, t, v, 0, 0, 0, 0, 0)
    B.lets[s.name], B.let_ty[s.name] = i, t
  elseif op == "barrier" then
    push(B, OP.barrier, 0)
    B.barriers = B.barriers + 1
  else
    fail(B, path, "unknown statement '%s' (statements: let, store, barrier)", tostring(op))
  end
end

local function read_buffers(B, list)
  if type(list) ~= "table" or #list == 0 then
    fail(B, "buffers", "a program needs a list of at least one buffer")
  end
  if #list > MAX_BUFFERS then
    fail(B, "buffers", "%d buffers, at most %d", #list, MAX_BUFFERS)
  end
  local names = {}
  for i, d in ipairs(list) do
    local path = "buffers[" .. i .. "]"
    if type(d) ~= "table" then fail(B, path, "expected a table, got %s", type(d)) end
    if not is_ident(d.name) then
      fail(B, path, "name must be an identifier, got %s", tostring(d.name))
    end
    if B.buffer_index[d.name] then fail(B, path, "buffer '%s' is declared twice", d.name) end
    if not TYPES[d.type] then
      fail(B, path, "buffer '%s': unknown type '%s' (types: u32, i32, f32)", d.name, tostring(d.type))
    end
    if not ROLES[d.role] then
      fail(B, path, "buffer '%s': unknown role '%s' (roles: input, output, inout)", d.name, tostring(d.role))
    end
    B.buffers[i] = { name = d.name, type = d.type, role = d.role, index = i,
                     tcode = TYPES[d.type], rcode = ROLES[d.role] }
    B.buffer_index[d.name] = i
    names[i] = d.name
  end
  B.buffer_list = table.concat(names, ", ")
end

--- P.new(desc) -> program. Raises with the program name and the path of the
--- offending entry (e.g. "body[3].value[2]") on a malformed description, and
--- runs the same validation a dispatch runs (races between stages).
function M.new(desc)
  if type(desc) ~= "table" then
    error("phaseprobe.program.new: expected a description table, got " .. type(desc), 2)
  end
  local name = desc.name or "program"
  if type(name) ~= "string" then
    error("phaseprobe.program.new: name must be a string", 2)
  end
  local B = new_builder(name)
  read_buffers(B, desc.buffers)
  if type(desc.body) ~= "table" or #desc.body == 0 then
    fail(B, "body", "a program needs a list of at least one statement")
  end
  for i, s in ipairs(desc.body) do
    emit_stmt(B, s, "body[" .. i .. "]")
  end
  local fixpoint = desc.fixpoint or 1
  if math.type(fixpoint) ~= "integer" or fixpoint < 1 then
    fail(B, "fixpoint", "must be a positive integer, got %s", tostring(fixpoint))
  end
  local prog = setmetatable({
    name = name,
    buffers = B.buffers,
    buffer_index = B.buffer_index,
    fixpoint = fixpoint,
    nodes = B.n,
    barriers = B.barriers,
    stages = B.barriers + 1,
    op = B.op, ty = B.ty, a = B.a, b = B.b, c = B.c,
    buf = B.buf, imm = B.imm, key = B.key,
  }, Program)
  prog:validate()
  return prog
end

function Program:__tostring()
  return string.format("phaseprobe.program '%s' (%d nodes, %d buffers, %d grid barriers, fixpoint %d)",
    self.name, self.nodes, #self.buffers, self.barriers, self.fixpoint)
end

-- ---- validation (the per-dispatch whole-program walk) -----------------------
--- prog:validate() -> summary. Walks every node: operand order and types,
--- store roles, and the race rule (within a stage, a stored buffer is loaded
--- only at shift 0). Returns the access summary: a flat integer list of
--- (stage, buffer, shift, kind) quadruples, kind 1 = load, 2 = store, one per
--- distinct access, in first-seen order. Raises on a violation.
function Program:validate()
  local op, ty, a, b, c = self.op, self.ty, self.a, self.b, self.c
  local buf, imm = self.buf, self.imm
  local buffers = self.buffers
  local LOAD, STORE, BARRIER, LET, REF, CONST, GID = OP.load, OP.store, OP.barrier, OP.let, OP.ref, OP.const, OP.gid
  local summary, ns = {}, 0
  local seen = {}
  local stage = 0
  local shifted = {} -- buffer -> node index of the first shifted load in this stage
  local stored = {}  -- buffer -> node index of the first store in this stage
  local function close_stage()
    for bi, li in pairs(shifted) do
      local si = stored[bi]
      if si then
        error(string.format(
          "program '%s': stage %d: node %d loads '%s' at shift %d and node %d stores '%s' in the same stage; "
            .. "threads would race (separate them with a grid barrier)",
          self.name, stage, li, buffers[bi].name, imm[li], si, buffers[bi].name), 0)
      end
    end
    shifted, stored = {}, {}
  end
  for i = 1, self.nodes do
    local o = op[i]
    if o == LOAD then
      local bi, s = buf[i], imm[i]
      if s ~= 0 and not shifted[bi] then shifted[bi] = i end
      local k = ((stage * 64 + bi) << 32) | s
      if not seen[k] then
        seen[k] = true
        summary[ns + 1], summary[ns + 2], summary[ns + 3], summary[ns + 4] = stage, bi, s, 1
        ns = ns + 4
      end
    elseif o == STORE then
      local bi = buf[i]
      if buffers[bi].rcode == ROLES.input then
        error(string.format("program '%s': node %d stores to input buffer '%s'", self.name, i, buffers[bi].name), 0)
      end
      if ty[a[i]] ~= buffers[bi].tcode then
        error(string.format("program '%s': node %d stores a %s value into '%s' (%s)", self.name, i,
          TYPE_NAMES[ty[a[i]]] or "?", buffers[bi].name, buffers[bi].type), 0)
      end
      if not stored[bi] then stored[bi] = i end
      local k = -(((stage * 64 + bi) << 32) | 1)
      if not seen[k] then
        seen[k] = true
        summary[ns + 1], summary[ns + 2], summary[ns + 3], summary[ns + 4] = stage, bi, 0, 2
        ns = ns + 4
      end
    elseif o == BARRIER then
      close_stage()
      stage = stage + 1
    elseif o == LET then
      if a[i] >= i or a[i] < 1 then
        error(string.format("program '%s': node %d: let operand %d out of order", self.name, i, a[i]), 0)
      end
    elseif o == REF then
      local li = imm[i]
      if li >= i or op[li] ~= LET then
        error(string.format("program '%s': node %d refers to node %d, which is not an earlier let", self.name, i, li), 0)
      end
    elseif o ~= CONST and o ~= GID then
      local t = ty[i]
      local x, y, z = a[i], b[i], c[i]
      if x >= i or y >= i or z >= i or x < 1 or y < 1 or ty[x] ~= t or ty[y] ~= t
        or (o == OP.fma and (z < 1 or ty[z] ~= t)) then
        error(string.format("program '%s': node %d (%s): operands out of order or of another type",
          self.name, i, OP_NAMES[o] or "?"), 0)
      end
    end
  end
  close_stage()
  return summary
end

-- ---- a generator of programs of a given size ------------------------------
-- splitmix64 on Lua integers (wrapping arithmetic)
local function rng_new(seed)
  local state = seed or 1
  return function()
    state = state + 0x9E3779B97F4A7C15
    local z = state
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
end
M.rng = rng_new

local function below(r, n) -- uniform-ish integer in [0, n)
  return (r() >> 1) % n
end

--- P.generate{nodes=, barriers=0, type="u32", seed=1, name=, fixpoint=1,
---            window=8} -> program with exactly `nodes` nodes.
--- Buffers: in0, in1 (input), state (inout), out (output) and, with
--- barriers, pa and pb (output) written in alternate stages and read at a
--- nonzero shift in the next one, so every barrier carries data across
--- blocks. The last stage stores out and state.
function M.generate(o)
  o = o or {}
  local nodes = o.nodes or 64
  local barriers = o.barriers or 0
  local tyname = o.type or "u32"
  local name = o.name or string.format("gen_%d_%d", nodes, barriers)
  if not TYPES[tyname] then
    error(string.format("phaseprobe.program.generate: unknown type '%s' (types: u32, i32, f32)", tostring(tyname)), 2)
  end
  if math.type(barriers) ~= "integer" or barriers < 0 then
    error("phaseprobe.program.generate: barriers must be a non-negative integer", 2)
  end
  local stages = barriers + 1
  -- per stage at least one store of a 3-node value (4 nodes), the last stage two
  local min_nodes = stages * 4 + 4 + barriers
  if math.type(nodes) ~= "integer" or nodes < min_nodes then
    error(string.format("phaseprobe.program.generate: nodes must be an integer >= %d for %d barriers, got %s",
      min_nodes, barriers, tostring(nodes)), 2)
  end
  local r = rng_new(o.seed or 1)
  local window = o.window or 8
  local isf = tyname == "f32"
  local ops2 = isf and { "add", "sub", "mul", "min", "max" } or { "add", "sub", "mul", "min", "max", "xor" }

  local function const()
    if isf then
      return M.const(0.5 + below(r, 1024) / 1024, "f32")
    elseif tyname == "i32" then
      return M.const(below(r, 2001) - 1000, "i32")
    end
    return M.const((r() & 0xFFFFFFFF) | 1, "u32")
  end

  local lets = {}
  local nlet = 0
  local buffers = {
    { name = "in0", type = tyname, role = "input" },
    { name = "in1", type = tyname, role = "input" },
    { name = "state", type = tyname, role = "inout" },
    { name = "out", type = tyname, role = "output" },
  }
  if barriers > 0 then
    buffers[#buffers + 1] = { name = "pa", type = tyname, role = "output" }
    buffers[#buffers + 1] = { name = "pb", type = tyname, role = "output" }
  end

  -- a few neighbour offsets per program, as real kernels have
  local in_shifts = { 0, 0, 1 + below(r, 1 << 20), 1 + below(r, 1 << 20) }
  local prev_shifts = { 1 + below(r, 1 << 20), 1 + below(r, 1 << 20) }
  local stage_prev -- buffer written by the previous stage
  local function leaf()
    local k = below(r, 10)
    if k < 3 and nlet > 0 then
      local lo = math.max(1, nlet - window + 1)
      return M.ref(lets[lo + below(r, nlet - lo + 1)])
    elseif k < 5 then
      return M.load(k == 3 and "in0" or "in1", in_shifts[1 + below(r, 4)])
    elseif k < 6 and stage_prev then
      return M.load(stage_prev, prev_shifts[1 + below(r, 2)])
    elseif k < 7 then
      return M.load("state")
    elseif k < 8 and not isf then
      return M.gid()
    end
    return const()
  end

  -- Part sizes of a tree are 1 or >= 3: no operator has one operand.
  local function split2(m) -- m == 2 or m >= 4
    if m == 2 then return 1, 1 end
    local l = 1 + below(r, m - 1)
    if l == 2 then l = 1 end
    if m - l == 2 then l = m - 1 end
    return l, m - l
  end
  local function split3(m) -- m == 3 or m >= 5
    local p1 = 1 + below(r, m - 2)
    if p1 == 2 or m - p1 == 3 then p1 = 1 end
    return p1, split2(m - p1)
  end

  -- a tree with exactly `size` nodes (size == 1 or size >= 3)
  local function tree(size)
    if size == 1 then return leaf() end
    local m = size - 1
    if m == 3 or (m >= 5 and below(r, 6) == 0) then
      local p1, p2, p3 = split3(m)
      return M.fma(tree(p1), tree(p2), tree(p3))
    end
    local l, rr = split2(m)
    local op = ops2[1 + below(r, #ops2)]
    return M[op](tree(l), tree(rr))
  end

  -- split `budget` nodes of one stage into lets and the final store(s)
  local body = {}
  local total = nodes - barriers
  local base = (total - 4) // stages -- every stage >= 4 nodes, the last >= 8
  for s = 0, barriers do
    local last = s == barriers
    local budget = last and (total - base * barriers) or base
    local store_sizes
    local reserve = last and 8 or 4
    while budget - reserve > 24 do
      local size = 12 + below(r, 12) -- let: 1 + tree
      local value = tree(size - 1)
      nlet = nlet + 1
      local lname = "t" .. nlet
      body[#body + 1] = M.let(lname, value)
      lets[nlet] = lname
      budget = budget - size
    end
    if last then
      -- store state (1 + tree) and out (1 + tree); each tree >= 3 nodes
      local half = budget // 2
      store_sizes = { half, budget - half }
    else
      store_sizes = { budget }
    end
    local targets = last and { "state", "out" } or { (s % 2 == 0) and "pa" or "pb" }
    for k, size in ipairs(store_sizes) do
      body[#body + 1] = M.store(targets[k], tree(size - 1)) -- size >= 4
    end
    if not last then
      body[#body + 1] = M.barrier()
      stage_prev = (s % 2 == 0) and "pa" or "pb"
    end
  end
  local prog = M.new{ name = name, buffers = buffers, body = body, fixpoint = o.fixpoint or 1 }
  if prog.nodes ~= nodes then
    error(string.format("phaseprobe.program.generate: internal error, %d nodes instead of %d", prog.nodes, nodes))
  end
  return prog
end

--- P.inputs(prog, n, seed) -> {name = array} for every input and inout
--- buffer: n deterministic values of the buffer's type.
function M.inputs(prog, n, seed)
  local r = rng_new((seed or 7) * 0x100000001B3 + n)
  local out = {}
  for _, bd in ipairs(prog.buffers) do
    if bd.role ~= "output" then
      local t = {}
      for i = 1, n do
        if bd.type == "u32" then
          t[i] = r() & 0xFFFFFFFF
        elseif bd.type == "i32" then
          t[i] = ((r() & 0xFFFFFFFF) ~ 0x80000000) - 0x80000000
        else
          t[i] = f32((below(r, 1 << 20) / (1 << 19)) - 1.0)
        end
      end
      out[bd.name] = t
    end
  end
  return out
end

-- ---- the CPU evaluation -----------------------------------------------------
-- Column-wise: each node computes all n elements before the next node runs.
-- That equals per-thread program order because validation rules out
-- cross-element reads of a buffer stored in the same stage, and barriers
-- order the stages.

local TEMPLATES = {
  [1] = { -- u32
    add = "(@1 + @2) & 0xFFFFFFFF", sub = "(@1 - @2) & 0xFFFFFFFF", mul = "(@1 * @2) & 0xFFFFFFFF",
    fma = "(@1 * @2 + @3) & 0xFFFFFFFF", min = "(@1 < @2) and @1 or @2", max = "(@1 > @2) and @1 or @2",
    xor = "@1 ~ @2",
  },
  [2] = { -- i32: wrap to the signed range
    add = "((@1 + @2 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
    sub = "((@1 - @2 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
    mul = "((@1 * @2 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
    fma = "((@1 * @2 + @3 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
    min = "(@1 < @2) and @1 or @2", max = "(@1 > @2) and @1 or @2", xor = "@1 ~ @2",
  },
  [3] = { -- f32: exact in double, then one rounding (fma rounds twice: compare with tolerance)
    add = "F(@1 + @2)", sub = "F(@1 - @2)", mul = "F(@1 * @2)", fma = "F(@1 * @2 + @3)",
    min = "FMIN(@1, @2)", max = "FMAX(@1, @2)",
  },
}

-- PTX min.f32 / max.f32: a NaN operand yields the other operand.
local function fmin(x, y)
  if x ~= x then return y elseif y ~= y then return x end
  return x < y and x or y
end
local function fmax(x, y)
  if x ~= x then return y elseif y ~= y then return x end
  return x > y and x or y
end

local kernels = {}
-- kernel(ty, op, kinds): kinds is a string of "c" (column) or "s" (scalar)
-- per operand. All scalars: returns a scalar.
local function kernel(ty, opname, kinds)
  local key = ty .. opname .. kinds
  local k = kernels[key]
  if k then return k end
  local expr = TEMPLATES[ty][opname]
  local names = { "a", "b", "c" }
  local allscalar = not kinds:find("c")
  expr = expr:gsub("@(%d)", function(d)
    local idx = tonumber(d)
    if kinds:sub(idx, idx) == "c" then return names[idx] .. "[i]" end
    return names[idx]
  end)
  local src
  if allscalar then
    src = "local F, FMIN, FMAX = ... return function(n, a, b, c) return " .. expr .. " end"
  else
    src = "local F, FMIN, FMAX = ... return function(n, a, b, c) local d = {} for i = 1, n do d[i] = "
      .. expr .. " end return d end"
  end
  k = assert(load(src, "=phaseprobe.program.kernel(" .. key .. ")"))(f32, fmin, fmax)
  kernels[key] = k
  return k
end

local function check_input(prog, bd, data, n)
  if type(data) ~= "table" then
    error(string.format("program '%s': input '%s' must be an array of %d %s values, got %s",
      prog.name, bd.name, n, bd.type, type(data)), 0)
  end
  if #data ~= n then
    error(string.format("program '%s': input '%s' has %d elements, expected n = %d",
      prog.name, bd.name, #data, n), 0)
  end
  local col = {}
  for i = 1, n do
    local v = data[i]
    if bd.type == "f32" then
      if type(v) ~= "number" then
        error(string.format("program '%s': input '%s'[%d] is not a number", prog.name, bd.name, i), 0)
      end
      col[i] = f32(v)
    else
      local iv = math.tointeger(v)
      local lo, hi = 0, 0xFFFFFFFF
      if bd.type == "i32" then lo, hi = -0x80000000, 0x7FFFFFFF end
      if not iv or iv < lo or iv > hi then
        error(string.format("program '%s': input '%s'[%d] = %s is not a %s value", prog.name, bd.name, i,
          tostring(v), bd.type), 0)
      end
      col[i] = iv
    end
  end
  return col
end

local function fill(n, v)
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end

local function shifted(col, k, n)
  k = k % n
  if k == 0 then return col end
  local d = table.move(col, k + 1, n, 1, {})
  return table.move(col, 1, k, n - k + 1, d)
end

--- prog:evaluate(inputs, n [, fixpoint]) -> {name = array} for every
--- output and inout buffer (1-based arrays of n values). `inputs` holds an
--- array of n values for every input and inout buffer; outputs start as
--- zeros, as the dispatcher clears them.
function Program:evaluate(inputs, n, fixpoint)
  if math.type(n) ~= "integer" or n < 1 then
    error(string.format("program '%s': evaluate: n must be a positive integer, got %s", self.name, tostring(n)), 2)
  end
  fixpoint = fixpoint or self.fixpoint
  inputs = inputs or {}
  local cols = {}
  for bi, bd in ipairs(self.buffers) do
    if bd.role == "output" then
      cols[bi] = fill(n, bd.type == "f32" and 0.0 or 0)
    else
      if inputs[bd.name] == nil then
        error(string.format("program '%s': evaluate: no data for %s buffer '%s'", self.name, bd.role, bd.name), 2)
      end
      cols[bi] = check_input(self, bd, inputs[bd.name], n)
    end
  end
  local gidcol = {}
  for i = 1, n do gidcol[i] = i - 1 end
  local op, ty, a, b, c, buf, imm = self.op, self.ty, self.a, self.b, self.c, self.buf, self.imm
  local LOAD, CONST, GID, REF, LET, STORE, BARRIER = OP.load, OP.const, OP.gid, OP.ref, OP.let, OP.store, OP.barrier
  local opname = OP_NAMES
  for _ = 1, fixpoint do
    local vals = {}
    for i = 1, self.nodes do
      local o = op[i]
      if o == LOAD then
        vals[i] = shifted(cols[buf[i]], imm[i], n)
      elseif o == CONST then
        vals[i] = imm[i]
      elseif o == GID then
        vals[i] = gidcol
      elseif o == REF then
        vals[i] = vals[imm[i]]
      elseif o == LET then
        vals[i] = vals[a[i]]
        vals[a[i]] = nil
      elseif o == STORE then
        local v = vals[a[i]]
        vals[a[i]] = nil
        cols[buf[i]] = type(v) == "table" and v or fill(n, v)
      elseif o ~= BARRIER then
        local x, y, z = vals[a[i]], vals[b[i]], c[i] ~= 0 and vals[c[i]] or nil
        local kinds = (type(x) == "table" and "c" or "s") .. (type(y) == "table" and "c" or "s")
          .. (z == nil and "" or (type(z) == "table" and "c" or "s"))
        vals[i] = kernel(ty[i], opname[o], kinds)(n, x, y, z)
        vals[a[i]], vals[b[i]] = nil, nil
        if c[i] ~= 0 then vals[c[i]] = nil end
      end
    end
  end
  local out = {}
  for bi, bd in ipairs(self.buffers) do
    if bd.role ~= "input" then
      out[bd.name] = table.move(cols[bi], 1, n, 1, {})
    end
  end
  return out
end

--- P.compare(prog, got, want [, tolerance]) -> true | false, message.
--- Integer buffers must match exactly; f32 buffers within `tolerance`
--- (relative, default 1e-5) with NaN equal to NaN.
function M.compare(prog, got, want, tol)
  tol = tol or 1e-5
  for _, bd in ipairs(prog.buffers) do
    if bd.role ~= "input" then
      local g, w = got[bd.name], want[bd.name]
      if type(g) ~= "table" then
        return false, string.format("buffer '%s' was not read back", bd.name)
      end
      if #g ~= #w then
        return false, string.format("buffer '%s': %d elements read back, %d expected", bd.name, #g, #w)
      end
      local bad, first = 0, nil
      for i = 1, #w do
        local x, y = g[i], w[i]
        local ok
        if bd.type == "f32" then
          ok = (x == y) or (x ~= x and y ~= y)
            or (math.abs(x - y) <= tol * math.max(math.abs(x), math.abs(y)) + 1e-30)
        else
          ok = x == y
        end
        if not ok then
          bad = bad + 1
          first = first or i
        end
      end
      if bad > 0 then
        return false, string.format("buffer '%s': %d of %d elements differ; first at gid %d: got %s, expected %s",
          bd.name, bad, #w, first - 1, tostring(g[first]), tostring(w[first]))
      end
    end
  end
  return true
end

return M
