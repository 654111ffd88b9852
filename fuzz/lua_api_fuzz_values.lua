-- lua_api_fuzz_values.lua: what the calls of the Lua API fuzzer are made
-- of. The files they may read and write (made in --scratch from the
-- checkout's fixtures) and the makers of values: numbers and strings,
-- plausible and hostile (tables whose metamethods misbehave, callbacks that
-- raise, collect, close objects or call back into the API), objects of the
-- wrong class, options tables, log texts and line iterators, schema
-- definitions, record sets and lists, CUDA launch descriptions.
--
-- Split out of fuzz/lua_api_fuzz.lua, the driver, which loads it (after
-- finding the surface and setting up its pools of live objects) and hands
-- it what the values come from: its random choices (math.random, seeded
-- with --seed), its pools, and the mischief hostile metamethods do.
-- fuzz/lua_api_fuzz_args.lua picks from these values for each entry point.
local D = ...
local R, chance, pick = D.R, D.chance, D.pick
local pp, records, REC, sample_cols = D.pp, D.records, D.REC, D.sample_cols
local keep, from_pool, open_one, pool_names = D.keep, D.from_pool, D.open_one, D.pool_names
local mischief, close_some, ROOT, SCRATCH = D.mischief, D.close_some, D.ROOT, D.SCRATCH

-- ---- files the calls may read and write ----------------------------------
-- (the specs' file helpers: slurp gives nil for a file that is not there)
package.path = ROOT .. "/spec/?.lua;" .. package.path
local files = require "helpers.files"
local slurp, spit = files.read, files.spit

os.execute("mkdir -p '" .. SCRATCH .. "/dir'")

local PTX_TEXTS = {}
for _, p in ipairs { "examples/kernels/saxpy.ptx", "examples/kernels/params.ptx",
  "examples/kernels/shared.ptx", "examples/kernels/gridsync.ptx",
  "spec/fixtures/ptx/vyre_grid3.ptx", "spec/fixtures/ptx/truncated.ptx",
  "spec/fixtures/ptx/comments_strings.ptx", "spec/fixtures/ptx/nul.ptx" } do
  local s = slurp(ROOT .. "/" .. p)
  if s then PTX_TEXTS[#PTX_TEXTS + 1] = s end
end
PTX_TEXTS[#PTX_TEXTS + 1] = files.slurp(ROOT .. "/spec/fixtures/cuda/kinds.ptx")
PTX_TEXTS[#PTX_TEXTS + 1] = ".version 8.0\n.target sm_90\n.entry e(\n.param .u32 x["
PTX_TEXTS[#PTX_TEXTS + 1] = "not ptx at all \0 with a NUL"
local KINDS_PTX = PTX_TEXTS[#PTX_TEXTS - 2]
local SAXPY_PTX = PTX_TEXTS[1]
local FUNC_NAMES = { "kinds", "noargs", "two", "saxpy", "params_all", "shared_sum",
  "gridsync", "nosuch", "" }
local GLOBAL_NAMES = { "counter", "blob", "nosuch" }

local MIXED_LOG = slurp(ROOT .. "/spec/fixtures/logs/mixed.log") or ""
local LOG_LINES = {}
for l in MIXED_LOG:gmatch("[^\n]+") do LOG_LINES[#LOG_LINES + 1] = l end
LOG_LINES[#LOG_LINES + 1] = "p a=1 b=2 shape=x"
LOG_LINES[#LOG_LINES + 1] = "p a=3 b=4 shape=y c=1.5"
LOG_LINES[#LOG_LINES + 1] = "p a=-5 b=18446744073709551615"
LOG_LINES[#LOG_LINES + 1] = "q x=1 x=2"
LOG_LINES[#LOG_LINES + 1] = "p a= b"
LOG_LINES[#LOG_LINES + 1] = "noise without fields"

local FILES = {
  log = SCRATCH .. "/in.log", ptx = SCRATCH .. "/in.ptx", csv = SCRATCH .. "/in.csv",
  jsonl = SCRATCH .. "/in.jsonl", dir = SCRATCH .. "/dir", missing = SCRATCH .. "/missing/x",
}
spit(FILES.log, MIXED_LOG)
spit(FILES.ptx, PTX_TEXTS[#PTX_TEXTS - 2])
spit(FILES.csv, "\"seq\",\"wall_ns\",\"shape\"\n1,100,\"a\"\n2,200,\"b\"\n")
spit(FILES.jsonl, '{"seq":1,"wall_ns":100}\n{"seq":2,"wall_ns":200,"shape":"b"}\n')
local OUT_FILES = { SCRATCH .. "/out1", SCRATCH .. "/out2", "/dev/null", FILES.dir, FILES.missing }

-- ---- values -----------------------------------------------------------------
local NUMBERS = { 0, 1, -1, 2, 3, 7, 64, 255, 256, 1000, 4096, 65535, 1 << 31, (1 << 31) - 1,
  1 << 32, 1 << 53, 1 << 62, math.maxinteger, math.mininteger, -(1 << 31), 2 ^ 53, 2 ^ 61,
  2 ^ 64, 1e308, -1e308, 0.5, -0.0, 1.5, 1 / 0, -1 / 0, 0 / 0, 3.0 }

local function number()
  if chance(0.3) then return R(100) - 1 end
  return pick(NUMBERS)
end

local function small_int() return R(12) - 2 end


local function phase_name()
  local s = pp.schema()
  local list = chance(0.8) and s.phases or s.nested
  if #list > 0 and chance(0.9) then return pick(list) end
  return pick { "ptx", "prepare", "nosuch", "", "ptx_ns", "sub_ptx_digest_ns", "a\0b" }
end

local function nested_name()
  local s = pp.schema()
  if #s.nested > 0 and chance(0.9) then return pick(s.nested) end
  return phase_name()
end

local FIELD_NAMES = { "a", "b", "c", "shape", "seq", "wall_ns", "ptx_ns", "prepare_ns", "nodes",
  "@file", "@line", "nosuch", "", "kernel_src" }

local function long_string()
  return ("x"):rep(pick { 100, 1000, 70000 })
end

local function string_value()
  local r = R(10)
  if r == 1 then return "" end
  if r == 2 then return "a\0b" end
  if r == 3 then return long_string() end
  if r == 4 then return pick(LOG_LINES) end
  if r == 5 then return pick(FIELD_NAMES) end
  if r == 6 then
    local t = {}
    for i = 1, R(20) do t[i] = string.char(R(256) - 1) end
    return table.concat(t)
  end
  if r == 7 then return phase_name() end
  return pick { "x", "none", "hit", "miss", "event", "cupti", "user", "f32", "u8", "tsc",
    "monotonic", "stderr", "p", "vyre-cuda-dispatch-phase" }
end

local any -- forward

local function callback()
  local r = R(8)
  if r == 1 then return function() error("fuzz: callback raised", 0) end end
  if r == 2 then return function() collectgarbage() end end
  if r == 3 then return function() close_some() end end
  if r == 4 then return function() mischief() return any() end end
  if r == 5 then return function(...) return ... end end
  if r == 6 then return function() return any(), any() end end
  return function() end
end

-- A table with misbehaving metamethods around `t`.
local function hostile(t)
  t = t or {}
  local mt = {}
  if chance(0.5) then
    mt.__len = pick {
      function() return 2 ^ 61 end, function() return -1 end, function() return 0 / 0 end,
      function() return math.maxinteger end, function() error("fuzz: __len raised", 0) end,
      function() return "x" end, function() collectgarbage() return 3 end,
      function() close_some() return 1 end,
    }
  end
  if chance(0.5) then
    local fields = {}
    for k, v in pairs(t) do fields[k] = v end
    if chance(0.5) then for k in pairs(fields) do t[k] = nil end end
    mt.__index = function(_, k)
      mischief()
      local v = fields[k]
      if type(v) == "string" then return v .. "" end
      return v
    end
  end
  if chance(0.3) then
    mt.__tostring = pick { function() return {} end, function() error("fuzz: __tostring", 0) end,
      function() collectgarbage() return "hostile" end }
  end
  if chance(0.2) then
    mt.__gc = function() pcall(mischief) end
  end
  if chance(0.1) then mt.__eq = function() error("fuzz: __eq", 0) end end
  if chance(0.1) then mt.__call = function() mischief() end end
  return setmetatable(t, mt)
end

local function number_list(n)
  local t = {}
  for i = 1, n do t[i] = chance(0.9) and (R(1000) * 1.5) or number() end
  if chance(0.05) then t[R(n + 1)] = "x" end
  return t
end

-- Another class's object, or a plain table (empty, without string keys,
-- of tables, hostile) where a class's objects are tables themselves (the
-- printable results, record sets).
local function wrong_object()
  if #pool_names > 0 and chance(0.6) then
    local v = from_pool(pick(pool_names))
    if v ~= nil then return v end
  end
  if chance(0.5) then
    return pick { {}, { [true] = 1, [2.5] = "x" }, { {}, { {} } }, { 1, 2, nil, 4 } }
  end
  return pick { io.stdout, coroutine.create(function() end), type, sample_cols }
end

any = function()
  local r = R(20)
  if r <= 5 then return wrong_object() end
  if r <= 8 then return number() end
  if r <= 11 then return string_value() end
  if r == 12 then return hostile(chance(0.5) and {} or { 1, 2, 3 }) end
  if r == 13 then return {} end
  if r == 14 then return number_list(R(10)) end
  if r == 15 then return callback() end
  if r == 16 then return chance(0.5) end
  if r == 17 then return nil end
  return string_value()
end

-- May wrap an options table in hostility.
local function opts(t)
  if chance(0.15) then return hostile(t) end
  if chance(0.05) then return any() end
  return t
end

local function read_path()
  local r = R(10)
  if r <= 4 then return FILES.log end
  if r == 5 then return FILES.dir end
  if r == 6 then return FILES.missing end
  if r == 7 then return "/dev/null" end
  if r == 8 then return "/dev/zero" end
  if r == 9 then return "-" end
  return FILES.ptx
end

local function log_text()
  local n = R(12) - 1
  local t = {}
  for i = 1, n do t[i] = pick(LOG_LINES) end
  if chance(0.1) then t[#t + 1] = long_string() end
  return table.concat(t, "\n") .. (chance(0.8) and "\n" or "")
end

local function lines_iter()
  local n, limit = 0, R(30) - 1
  local mode = R(10)
  return function()
    n = n + 1
    if n > limit then return nil end
    if mode == 1 and n == 3 then close_some() end
    if mode == 2 and n == 5 then error("fuzz: iterator raised", 0) end
    if mode == 3 then collectgarbage() end
    if mode == 4 and n == 2 then return any() end
    return pick(LOG_LINES)
  end
end

local function parse_opts()
  local o = {}
  if chance(0.3) then o.prefix = chance(0.5) and "p" or { "p", "vyre-cuda-dispatch-phase" } end
  if chance(0.2) then o.numeric = { "a", "b" } end
  if chance(0.2) then o.schemas = { pp.default_schema(), pp.schema() } end
  if chance(0.2) then o.max_errors = pick { 1, 5, 100 } end
  if chance(0.3) then o.max_bytes = pick { 1, 100, 4096, 1 << 20 } end
  if chance(0.2) then o.source = string_value() end
  if chance(0.1) then o.progress = callback() end
  return opts(o)
end

local function ptx_opts(file)
  local o = {}
  if chance(0.3) then o.markers = { "BARRIER_MARK", "bar.sync" } end
  if chance(0.2) then o.counter_global = chance(0.5) and "counter" or false end
  if chance(0.2) then o.max_line = pick { 1, 16, 4096 } end
  if file and chance(0.5) then o.max_bytes = pick { 1, 1000, 1 << 20 } end
  return opts(o)
end

local function schema_def()
  local n = R(4)
  local ph = {}
  for i = 1, n do ph[i] = "ph" .. R(6) end
  local d = { prefix = "fz" .. R(4), phases = ph, use = chance(0.5) }
  if chance(0.5) then d.nested = { "ph1_inner" } end
  if chance(0.5) then d.counts = { "items", "bytes" } end
  if chance(0.3) then d.caches = { "mod" } end
  return opts(d)
end

local function set_value()
  local s = from_pool("records.set")
  if s and chance(0.9) then return s end
  return records.from_string(log_text())
end

local function records_list()
  local set = from_pool("records.set")
  if set and chance(0.5) then
    local ok, list = pcall(function() return set:records() end)
    if ok then return list end
  end
  local list = {}
  for i = 1, R(5) do
    list[i] = from_pool(REC) or pick { { seq = i, wall_ns = i * 10 }, { { "seq", tostring(i), true }, { "x", "y" } } }
  end
  return list
end

-- Arguments that fit fn's parameters (from fn.params), or nothing.
local function fitting_args(fn)
  local ok, params = pcall(function() return fn.params end)
  if not ok or type(params) ~= "table" then return nil end
  local a = {}
  for i, p in ipairs(params) do
    local ty = p.type or ""
    if p.size > 8 then a[i] = ("\0"):rep(p.size)
    elseif ty:match("^f") then a[i] = 1.5
    elseif p.size == 8 then
      a[i] = open_one("phaseprobe.cuda.buffer") or 0
    else a[i] = 1 end
  end
  return a
end

-- A launch description for fn:launch (what = "launch"), w:launch_loop
-- ("loop"), s:timed ("timed") or fn:prepare ("prepare": a loop's fields,
-- the function the receiver).
local function launch_desc(what, fn, self)
  local d = { grid = chance(0.9) and pick { 1, 2, { 1, 1 } } or pick { 0, -1, { 1, 2, 3, 4 }, 2 ^ 40 },
    block = chance(0.9) and pick { 1, 32, { 8, 8 } } or pick { 2048, 0, "x" } }
  if what == "loop" or what == "timed" then
    -- mostly a function of the stream's (or window's) own context
    -- (a window has no context field: reading one raises)
    local want
    if not pcall(function() want = self.stream.context end) then
      pcall(function() want = self.context end)
    end
    fn = nil
    for _ = 1, 6 do
      local f = open_one("phaseprobe.cuda.function")
      local ok, same = pcall(function() return f.module.context == want end)
      if ok and same then fn = f break end
    end
    if not fn and want and chance(0.8) then
      local ok, f = pcall(function()
        local mod = want:load(chance(0.5) and KINDS_PTX or SAXPY_PTX)
        keep(mod)
        return mod:func(pick { "kinds", "noargs", "two", "saxpy" })
      end)
      if ok then fn = f; keep(f) end
    end
    fn = fn or from_pool("phaseprobe.cuda.function")
    d.fn = chance(0.95) and fn or any()
  end
  if chance(0.85) then
    d.args = fn and fitting_args(fn) or nil
  else
    local a = {}
    for i = 1, R(7) - 1 do
      a[i] = pick { 1, 2.5, -1, true, "xxxx", ("\0"):rep(12), from_pool("phaseprobe.cuda.buffer") or 0,
        from_pool("phaseprobe.cuda.global") or 0, 2 ^ 40 }
    end
    d.args = a
  end
  if chance(0.2) then d.shared = pick { 0, 1024, 1 << 20 } end
  if chance(0.1) then d.cooperative = true end
  if what == "launch" or what == "costs" then
    if chance(0.3) then d.stream = from_pool("phaseprobe.cuda.stream") end
    if what == "costs" and chance(0.5) then d.samples = R(5) end
  else
    if chance(0.3) then d.iterations = R(4) - 1 end
    if chance(0.2) then d.fence = true end
    if chance(0.2) then
      d.reset = { target = from_pool("phaseprobe.cuda.buffer") or from_pool("phaseprobe.cuda.global"),
        bytes = pick { nil, 1, 4, 1 << 30 }, value = pick { nil, 0, 255, 256 } }
    end
    if chance(0.1) then d.source = pick { "event", "cupti", "bogus" } end
  end
  if (what == "timed" or what == "prepare") and chance(0.2) then d.spin_us = pick { 0, 0.5, 1 } end
  if chance(0.03) then d.bogus = 1 end
  return opts(d)
end

return {
  PTX_TEXTS = PTX_TEXTS, KINDS_PTX = KINDS_PTX, SAXPY_PTX = SAXPY_PTX,
  FUNC_NAMES = FUNC_NAMES, GLOBAL_NAMES = GLOBAL_NAMES, FIELD_NAMES = FIELD_NAMES,
  FILES = FILES, OUT_FILES = OUT_FILES,
  number = number, small_int = small_int, phase_name = phase_name, nested_name = nested_name,
  string_value = string_value, callback = callback, number_list = number_list,
  wrong_object = wrong_object, any = any, opts = opts, read_path = read_path,
  log_text = log_text, lines_iter = lines_iter, parse_opts = parse_opts, ptx_opts = ptx_opts,
  schema_def = schema_def, set_value = set_value, records_list = records_list,
  launch_desc = launch_desc,
}
