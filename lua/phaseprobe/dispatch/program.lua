-- phaseprobe.dispatch.program: small element-wise GPU programs: the builders,
-- the flat representation P.new makes, and the validation every dispatch
-- runs. The generator of programs of a given size (P.generate, P.inputs) is
-- in dispatch/generate.lua and the CPU evaluation (prog:evaluate,
-- P.compare) in dispatch/eval.lua; both are reached from here.
--
-- Where it sits: the dispatcher (phaseprobe.dispatch) validates, digests
-- and lowers these programs (dispatch/lower.lua turns them into PTX) in its
-- phases; the demo generates them at three sizes.
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

-- counts as the reports write them: "1 operand", "1,024 nodes"
local function count(...) return require("phaseprobe.output.report").count(...) end

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

-- The index of the buffer a load or store names, or a failure naming it.
local function buffer_of(B, name, path, what)
  local bi = B.buffer_index[name]
  if not bi then
    fail(B, path, "%s unknown buffer '%s' (buffers: %s)", what, tostring(name), B.buffer_list)
  end
  return bi
end

-- The operation of node x (`what`: an expression or a statement), or a
-- failure when x is no table.
local function op_of(B, x, what, path)
  if type(x) ~= "table" then
    fail(B, path, "expected %s table, got %s", what, type(x))
  end
  return x.op
end

-- Emits expression `e` (children first) with type `ty`; returns its index.
local function emit_expr(B, e, ty, path)
  e = as_expr(e)
  local op = op_of(B, e, "an expression", path)
  if op == "load" then
    local bi = buffer_of(B, e.buf, path, "load of")
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
        fail(B, path, "%s needs %s, operand %d is missing", op, count(n, "operand"), k)
      end
      kids[k] = emit_expr(B, e[k], t, path .. "[" .. k .. "]")
    end
    if e[n + 1] ~= nil then
      fail(B, path, "%s takes %s, got more", op, count(n, "operand"))
    end
    return push(B, OP[op], t, kids[1], kids[2], kids[3] or 0), t
  elseif op == "let" or op == "store" or op == "barrier" then
    fail(B, path, "'%s' is a statement, not an expression", op)
  end
  fail(B, path, "unknown operation '%s' (expressions: load, const, gid, ref, add, sub, mul, fma, min, max, xor)", tostring(op))
end

local function emit_stmt(B, s, path)
  local op = op_of(B, s, "a statement", path)
  if op == "store" then
    local bi = buffer_of(B, s.buf, path, "store to")
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
    fail(B, "buffers", "%s, at most %s", count(#list, "buffer"), count(MAX_BUFFERS))
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
    error("phaseprobe.dispatch.program.new: expected a description table, got " .. type(desc), 2)
  end
  local name = desc.name or "program"
  if type(name) ~= "string" then
    error("phaseprobe.dispatch.program.new: name must be a string", 2)
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
  return string.format("phaseprobe.dispatch.program '%s' (%s, %s, %s, fixpoint %s)",
    self.name, count(self.nodes, "node"), count(#self.buffers, "buffer"),
    count(self.barriers, "grid barrier"), count(self.fixpoint))
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

-- The generator and the CPU evaluation, on this module's codes and builders.
require("phaseprobe.dispatch.generate")(M)
require("phaseprobe.dispatch.eval")(M, Program)

return M
