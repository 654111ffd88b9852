-- lua_api_fuzz.lua: random sequences of calls over the whole public Lua API
-- of phaseprobe, with hostile arguments, meant to run against a build of
-- phaseprobe.so under AddressSanitizer + UBSan (`make fuzz` does that, with
-- pp.cuda on the fake driver build/asan/libfakecuda.so).
--
--   lua5.4 fuzz/lua_api_fuzz.lua --seed N [--calls N] [--seconds S]
--          [--root CHECKOUT] [--scratch DIR] [--trace-from K]
--          [--show-errors PATTERN] [--quiet]
--
-- (run it in a scratch directory: a hostile argument may name a file
-- there; --root says where the checkout's fixtures are)
--
-- This file is the driver: it finds the surface, keeps pools of live
-- objects, makes the calls and reports, and holds the plausible arguments
-- of each entry point. What the calls are made of (files, plausible and
-- hostile values) is fuzz/lua_api_fuzz_values.lua, loaded from beside it.
--
-- The surface is found, not listed: every function of the module's tables,
-- every method and metamethod of every class the module registers (its
-- metatables in the registry, found by key or by __name, the record
-- metatable among them), and the functions and set methods of the Lua
-- modules phaseprobe.records, phaseprobe.output.export and
-- phaseprobe.record. Classes the module registers only when first needed
-- (the printable result tables of pp.stats(), pp.clock(), pp.ptx.scan(),
-- ...) are found by a warm-up that calls every entry point once before the
-- random calls start, and by a look at the registry every 1024 steps and at
-- the end. A new entry point is fuzzed, and counted, without touching the
-- fuzzer; at the end the driver prints how often each was called and
-- returned normally, which never returned normally (apart from those that
-- raise by design, BY_DESIGN below), and fails if one was never reached.
--
-- Each step calls one entry point, chosen at random, with arguments that
-- are mostly plausible (so that calls get past the argument checks) and
-- often hostile: metatables whose __len, __index, __tostring or __gc
-- misbehave (huge, negative, NaN, raising, collecting, closing objects),
-- huge, negative, NaN and infinite numbers, strings with NUL bytes, objects
-- of the wrong class, callbacks that raise, collect, call back into the API
-- or close the object that called them. Collections are forced in between,
-- scopes are opened and closed across coroutines.
--
-- Every choice comes from math.random seeded with --seed, so a run with the
-- same seed makes the same calls: a finding at call K reproduces with
-- --seed S --calls K, and --trace-from K prints each call from K on (to
-- stderr, before it runs). A sanitizer report ends the process with the
-- report; the exit status is then non-zero.
--
-- The fake driver's "trap" kernels break every later call of the process,
-- so none is loaded. What is never fuzzed with hostile values: durations and repeat counts of
-- calls that spin, sleep or launch by design (they are clamped to a few
-- microseconds or iterations), file paths (kept inside --scratch, plus
-- /dev/null, /dev/zero with a small max_bytes, a directory and a missing
-- file), and sink and notice descriptors (none of the process's own).

local args = {}
do
  local i = 1
  while arg and arg[i] do
    local k = arg[i]:match("^%-%-(.+)$")
    if k == "quiet" then
      args.quiet = true
      i = i + 1
    elseif k then
      args[k:gsub("%-", "_")] = arg[i + 1]
      i = i + 2
    else
      error("lua_api_fuzz: unexpected argument " .. arg[i])
    end
  end
end
local SEED = math.tointeger(tonumber(args.seed or "1")) or 1
local CALLS = math.tointeger(tonumber(args.calls or "100000")) or 100000
local SECONDS = tonumber(args.seconds or "0")
local SCRATCH = args.scratch or os.getenv("TMPDIR") or "/tmp"
local ROOT = args.root or "."
local TRACE_FROM = math.tointeger(tonumber(args.trace_from or "0")) or 0
local QUIET = args.quiet
local SHOW_ERRORS = args.show_errors -- a pattern: print the errors of matching entries

local pp = require "phaseprobe"
local records = require "phaseprobe.records"
local export = require "phaseprobe.output.export"
local record = require "phaseprobe.record"

math.randomseed(SEED)
local random = math.random
local function R(n) return random(n) end
local function chance(p) return random() < p end
local function pick(t) return t[random(#t)] end

local t_start = os.time()
local clock0 = os.clock()

-- ---- the surface ------------------------------------------------------------
local entries, by_name = {}, {}
local mt_class = {} -- metatable -> class name (registry name)

local function add(name, fn, class, kind)
  if by_name[name] then return end
  local e = { name = name, fn = fn, class = class, kind = kind, calls = 0, ok = 0 }
  entries[#entries + 1] = e
  by_name[name] = e
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do
    if type(k) == "string" then ks[#ks + 1] = k end
  end
  table.sort(ks)
  return ks
end

-- Every function of the module's tables (Lua submodules that pp.NAME
-- loaded and cached are not the C module's: they are walked apart).
local function walk(t, prefix)
  for _, k in ipairs(sorted_keys(t)) do
    local v = rawget(t, k)
    if type(v) == "function" then
      add(prefix .. k, v, nil, "function")
    elseif type(v) == "table" and v ~= package.loaded["phaseprobe." .. k] then
      walk(v, prefix .. k .. ".")
    end
  end
end
walk(pp, "pp.")

-- methods behind an __index: a table, or a closure over one (pp.cuda's
-- classes look methods up in a table, then call a field getter)
local function methods_of(index)
  if type(index) == "table" then return index end
  if type(index) == "function" then
    for i = 1, 8 do
      local n, v = debug.getupvalue(index, i)
      if not n then break end
      if type(v) == "table" and n ~= "_ENV" then return v end
    end
  end
  return nil
end

local function add_class(class, mt, label)
  label = label or class
  mt_class[mt] = class
  for _, k in ipairs(sorted_keys(mt)) do
    local v = rawget(mt, k)
    if type(v) == "function" and k:sub(1, 2) == "__" then
      add(label .. "." .. k, v, class, "meta")
    end
  end
  local m = methods_of(rawget(mt, "__index"))
  if m then
    for _, k in ipairs(sorted_keys(m)) do
      if type(m[k]) == "function" and k:sub(1, 2) ~= "__" then
        add(label .. ":" .. k, m[k], class, "method")
      end
    end
  end
end

-- The module's classes in the registry not seen yet: a table under a
-- "phaseprobe." key, or one whose __name says phaseprobe (a metatable kept
-- under another key). Adds them in name order (so a seed stays
-- reproducible) and returns their names.
local found_late = {} -- class -> the call count when it was found
local total = 0
local function scan_registry()
  local list = {}
  for k, v in pairs(debug.getregistry()) do
    if type(v) == "table" and not mt_class[v] then
      local name = rawget(v, "__name")
      local class = (type(k) == "string" and k:match("^phaseprobe%.") and k)
        or (type(name) == "string" and name:match("^phaseprobe%.") and name)
      if class then list[#list + 1] = { class = class, mt = v, by_key = type(k) == "string" } end
    end
  end
  table.sort(list, function(a, b)
    if a.class ~= b.class then return a.class < b.class end
    return a.by_key and not b.by_key
  end)
  local names = {}
  for _, c in ipairs(list) do
    if not mt_class[c.mt] then
      add_class(c.class, c.mt)
      names[#names + 1] = c.class
    end
  end
  return names
end
scan_registry()

-- records (phaseprobe.record, registered above with the other classes), and
-- their read-only field lists (reached through the operations that use them)
local REC = "phaseprobe.record"
local sample_cols = pp.parse.string("p a=1 b=2\n")
add("record._fields#", function(r) return #r._fields end, REC, "op")
add("record._fields[]=", function(r, k, v) r._fields[k] = v end, REC, "op")
add("record._fields:pairs", function(r)
  local n = 0
  for _ in pairs(r._fields) do n = n + 1 end
  return n
end, REC, "op")
add("record._fields:ipairs", function(r)
  local n = 0
  for _ in ipairs(r._fields) do n = n + 1 end
  return n
end, REC, "op")
add("record:pairs", function(r)
  local n = 0
  for _ in pairs(r) do n = n + 1 end
  return n
end, REC, "op")

-- the Lua modules
local function walk_module(m, prefix)
  for _, k in ipairs(sorted_keys(m)) do
    if type(m[k]) == "function" then add(prefix .. k, m[k], nil, "function") end
  end
end
walk_module(records, "records.")
walk_module(export, "export.")
walk_module(record, "record.")
local sample_set = records.wrap(sample_cols)
local SetMT = getmetatable(sample_set)
local GroupsMT = getmetatable(sample_set:group("a"))
add_class("records.set", SetMT)
add_class("records.groups", GroupsMT)

-- (debug.getmetatable: getmetatable gives a class's read-only view)
local function class_of(v)
  local mt = debug.getmetatable(v)
  if mt == nil then return nil end
  return mt_class[mt]
end

-- ---- pools of live objects --------------------------------------------------
-- Classes whose objects can be closed, and how.
local CLOSERS = {
  ["phaseprobe.parser"] = "close", ["phaseprobe.columns"] = "close",
  ["phaseprobe.cuda.context"] = "close", ["phaseprobe.cuda.module"] = "close",
  ["phaseprobe.cuda.function"] = "close", ["phaseprobe.cuda.global"] = "close",
  ["phaseprobe.cuda.buffer"] = "free", ["phaseprobe.cuda.stream"] = "close",
  ["phaseprobe.cuda.window"] = "discard",
}
local CLOSER_NAMES = sorted_keys(CLOSERS)

local POOL_MAX = 6
local pools = {}
local pool_names = {}

local function keep(v)
  local c = class_of(v)
  if not c then return end
  local p = pools[c]
  if not p then
    p = {}
    pools[c] = p
    pool_names[#pool_names + 1] = c
    table.sort(pool_names)
  end
  if #p < POOL_MAX then
    p[#p + 1] = v
    return
  end
  -- full: a closed object makes room first
  for _ = 1, 3 do
    local i = R(POOL_MAX)
    local ok, closed = pcall(function() return p[i].closed end)
    if ok and closed == true then
      p[i] = v
      return
    end
  end
  p[R(POOL_MAX)] = v
end

local function from_pool(c)
  local p = pools[c]
  if p and #p > 0 then return p[R(#p)] end
  return nil
end

-- An object of the class that is not closed (cuda handles say so in
-- .closed; parsers and stores in their tostring), or nil.
local function open_one(class)
  local p = pools[class]
  if not p or #p == 0 then return nil end
  for _ = 1, 3 do
    local v = p[R(#p)]
    local ok, closed = pcall(function()
      if class == "phaseprobe.cuda.window" then
        return v.stage ~= "open" or v.stream.closed or v.stream.context.closed
      end
      local ctx = v.context or (v.stream and v.stream.context) or (v.module and v.module.context)
      return v.closed or (ctx ~= nil and ctx.closed) or (v.module ~= nil and v.module.closed)
    end)
    if ok and closed == false then return v end
    if ok and closed == nil then
      local ok2, text = pcall(tostring, v)
      if ok2 and type(text) == "string" and not text:find("closed", 1, true)
        and not text:find("discarded", 1, true) and not text:find("collected", 1, true)
        and not text:find("freed", 1, true) then
        return v
      end
    end
  end
  return nil
end

-- Closes one or two pooled objects, each the way its class closes.
local function close_some()
  for _ = 1, R(2) do
    local c = pick(CLOSER_NAMES)
    local v = from_pool(c)
    if v then pcall(function() return v[CLOSERS[c]](v) end) end
  end
end

-- ---- values and arguments -------------------------------------------------
-- What the calls are made of (fuzz/lua_api_fuzz_values.lua, a file beside
-- this one, loaded with what it takes from here), and the plausible
-- arguments of each entry point with the limits on those that spin, sleep
-- or read.
local depth = 0
local call_entry -- forward

-- A side effect for hostile metamethods and callbacks.
local function mischief()
  local r = R(12)
  if r == 1 then collectgarbage() end
  if r == 2 then collectgarbage("step", R(100)) end
  if r == 3 then close_some() end
  if r == 4 then error("fuzz: mischief raised", 0) end
  if r == 5 and depth < 2 then call_entry(pick(entries)) end
end

local HERE = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local function part(name, ...)
  return assert(loadfile(HERE .. "/" .. name .. ".lua"))(...)
end
local D = { R = R, chance = chance, pick = pick, pp = pp, records = records, REC = REC,
  sample_cols = sample_cols, keep = keep, from_pool = from_pool, open_one = open_one,
  pool_names = pool_names, mischief = mischief, close_some = close_some, ROOT = ROOT, SCRATCH = SCRATCH }
local V = part("lua_api_fuzz_values", D)
local any, wrong_object, phase_name, nested_name = V.any, V.wrong_object, V.phase_name, V.nested_name
local log_text, launch_desc, KINDS_PTX, SAXPY_PTX = V.log_text, V.launch_desc, V.KINDS_PTX, V.SAXPY_PTX
local PTX_TEXTS, FUNC_NAMES, GLOBAL_NAMES = V.PTX_TEXTS, V.FUNC_NAMES, V.GLOBAL_NAMES
local FIELD_NAMES, FILES, OUT_FILES = V.FIELD_NAMES, V.FILES, V.OUT_FILES
local number, small_int, string_value, number_list = V.number, V.small_int, V.string_value, V.number_list
local callback, opts = V.callback, V.opts
local read_path, lines_iter = V.read_path, V.lines_iter
local parse_opts, ptx_opts, schema_def = V.parse_opts, V.ptx_opts, V.schema_def
local set_value, records_list = V.set_value, V.records_list

-- Plausible arguments, by entry name; self (for methods) is chosen apart.
local H = {}
H["pp.add_ns"] = function() return phase_name(), number() end
H["pp.add_nested_ns"] = function() return nested_name(), number() end
H["pp.cache"] = function() return pick { "ptx", "mod", "nosuch" }, pick { "hit", "miss", "disk_hit", "x" } end
H["pp.charge"] = function() return phase_name(), chance(0.8) and pp.mark() or number() end
H["pp.charge_since"] = H["pp.charge"]
H["pp.lap"] = H["pp.charge"]
H["pp.charge_nested"] = function() return nested_name(), chance(0.8) and pp.mark() or number() end
H["pp.charge_remainder"] = function() return phase_name(), pp.mark(), phase_name() end
H["pp.count"] = function()
  local s = pp.schema()
  return (#s.counts > 0 and chance(0.8)) and pick(s.counts) or string_value(), number()
end
H["pp.counts"] = function()
  local s = pp.schema()
  local t = {}
  for _, c in ipairs(s.counts) do if chance(0.5) then t[c] = chance(0.9) and R(1000) or number() end end
  if chance(0.1) then t[string_value()] = 1 end
  return opts(t)
end
H["pp.device_window_ns"] = function() return number() end
H["pp.probe_ns"] = H["pp.device_window_ns"]
H["pp.kernel_ns"] = function() return number(), pick { "event", "cupti", "user", "none", "x" }, number() end
H["pp.enable"] = function() return chance(0.9) end
H["pp.emit"] = function()
  if chance(0.3) then return nil end
  return opts { seq = chance(0.5) and R(100) or nil, wall_ns = chance(0.5) and number() or nil,
    enqueue_ns = chance(0.2) and number() or nil }
end
H["pp.measure"] = function() return phase_name(), callback(), any() end
H["pp.measure_nested"] = function() return nested_name(), callback(), any() end
H["pp.phase"] = function() return phase_name() end
H["pp.nested"] = function() return nested_name() end
H["pp.phase_ns"] = H["pp.phase"]
H["pp.schema"] = function()
  if chance(0.5) then return nil end
  return schema_def()
end
H["pp.use"] = function() return from_pool("phaseprobe.schema") or pp.default_schema() end
H["pp.select_clock"] = function() return pick { "tsc", "monotonic", "monotonic_raw", "sundial" } end
H["pp.sink"] = function() return pick { "none", "none", "/dev/null", SCRATCH .. "/sink.log", -1, 1000, 99999 } end
H["pp.notices"] = function() return pick { "none", "stderr", "/dev/null", SCRATCH .. "/notices.log", -1, 1000, 99999 } end
H["pp.tag"] = function() return pick { "device", "shape", "k" .. R(9), "Bad", "" }, pick { "x", "y1", nil, "a b", ("v"):rep(200) } end
H["pp.ticks_to_ns"] = function()
  if chance(0.8) then
    local a = pp.mark()
    return a, pp.mark()
  end
  return number(), number()
end
H["pp.store.capacity"] = function() return pick { nil, 0, 10, 1000, 100000, -1 } end
H["pp.store.enable"] = function() return chance(0.8) end
H["pp.store.get"] = function() return small_int() end
H["pp.store.records"] = function() return chance(0.5) and nil or small_int() end
H["pp.parse.file"] = function() return read_path(), parse_opts() end
H["pp.parse.string"] = function() return log_text(), parse_opts() end
H["pp.parse.lines"] = function() return lines_iter(), parse_opts() end
H["pp.parse.new"] = function() return parse_opts() end
H["pp.parse.store"] = function() return parse_opts() end
H["pp.numeric.summary"] = function() return opts(number_list(R(200))) end
H["pp.numeric.fit"] = function()
  local n = R(100)
  return opts(number_list(n)), opts(number_list(chance(0.9) and n or R(100)))
end
H["pp.ptx.scan"] = function() return pick(PTX_TEXTS), ptx_opts(false) end
H["pp.ptx.summary"] = H["pp.ptx.scan"]
H["pp.ptx.scan_file"] = function() return read_path(), ptx_opts(true) end
H["pp.ptx.count"] = function() return pick(PTX_TEXTS), pick { "bar.sync", "BARRIER_MARK", "", "\0" } end
H["pp.ptx.digest"] = function() return pick(PTX_TEXTS) end
H["pp.ptx.lines"] = H["pp.ptx.digest"]
H["pp.cuda.context"] = function() return pick { 0, 0, 0, 1, -1, 2 ^ 40 } end
H["pp.cuda.spin_us"] = function() return pick { 0, 0.5, 1, -1, 0 / 0 } end

H["phaseprobe.parser:file"] = function() return read_path(), chance(0.5) and callback() or nil end
H["phaseprobe.parser:string"] = function() return log_text(), chance(0.3) and string_value() or nil end
H["phaseprobe.parser:lines"] = function() return lines_iter(), chance(0.3) and string_value() or nil end
local function field() return pick(FIELD_NAMES) end
local function sel_of(c)
  local s = from_pool("phaseprobe.selection")
  if chance(0.6) then return nil end
  return s
end
H["phaseprobe.columns:kind"] = function() return field() end
H["phaseprobe.columns:row"] = function() return small_int(), chance(0.3) and opts { field(), field() } or nil end
H["phaseprobe.columns:get"] = function() return small_int(), field() end
H["phaseprobe.columns:line"] = function() return small_int() end
H["phaseprobe.columns:values"] = function(c) return field(), sel_of(c) end
H["phaseprobe.columns:summary"] = H["phaseprobe.columns:values"]
H["phaseprobe.columns:fit"] = function(c) return field(), field(), sel_of(c) end
H["phaseprobe.columns:fits"] = function(c) return opts { field(), field() }, opts { field() }, sel_of(c) end
H["phaseprobe.columns:lincomb"] = function(c)
  return opts { { field(), 1 }, { field(), -0.5 } }, sel_of(c), chance(0.3) and number() or nil
end
H["phaseprobe.columns:where"] = function(c) return field(), pick { 1, 3, "x", "y", nil, 1.5 }, sel_of(c) end
H["phaseprobe.columns:range"] = function(c) return field(), number(), number(), sel_of(c) end
H["phaseprobe.columns:compare"] = function(c)
  return field(), pick { "=", "!=", "<", "<=", ">", ">=", "~" },
    pick { "1", "-1", "18446744073709551615", "1e400", "0.5", "x", "", "9" .. string.rep("9", 400) }, sel_of(c)
end
H["phaseprobe.columns:select"] = function() return chance(0.3) and nil or opts { small_int(), small_int(), 1 } end
H["phaseprobe.columns:group"] = function(c) return field(), sel_of(c) end
H["phaseprobe.columns:distinct"] = function(c) return field(), sel_of(c), chance(0.3) and number() or nil end
H["phaseprobe.columns:prefixes"] = function(c) return sel_of(c) end
H["phaseprobe.columns:order"] = H["phaseprobe.columns:prefixes"]
H["phaseprobe.selection:get"] = function() return small_int() end
H["phaseprobe.schema.__eq"] = function()
  return pick { pp.schema(), pp.default_schema(), from_pool("phaseprobe.schema"), io.stdout, {} }
end
H["phaseprobe.schema.__index"] = function() return pick { "prefix", "phases", "fields", "id", "counts", "x", 1 } end

H["phaseprobe.cuda.context:load"] = function()
  return pick(PTX_TEXTS), chance(0.3) and opts { jit_log = chance(0.5), log_size = pick { 256, 4096, 100 },
    opt_level = pick { 0, 3, 9 }, max_registers = pick { 32, 0 } } or nil
end
H["phaseprobe.cuda.context:load_file"] = function()
  return read_path(), chance(0.5) and opts { max_bytes = pick { 1, 1 << 20 } } or nil
end
H["phaseprobe.cuda.context:alloc"] = function() return pick { 4, 64, 4096, 0, -1, 1 << 40 } end
H["phaseprobe.cuda.context:event_floor"] = function() return pick { nil, 1, 9, 64, 65 } end
H["phaseprobe.cuda.context:event_costs"] = function() return pick { nil, 1, 5, 0 } end
H["phaseprobe.cuda.context:calibrate_events"] = function()
  return chance(0.5) and opts { samples = pick { 1, 5, 0 }, source = pick { "auto", "event", "cupti", "x" } } or nil
end
H["phaseprobe.cuda.context:kernel_source"] = function() return pick { nil, "event", "cupti", "x" } end
H["phaseprobe.cuda.context.__index"] = function()
  return pick { "name", "ordinal", "closed", "usable", "stream", "events_idle", "event_floor_ns", "x", 1 }
end
H["phaseprobe.cuda.module:func"] = function() return pick(FUNC_NAMES) end
H["phaseprobe.cuda.module:global"] = function() return pick(GLOBAL_NAMES) end
H["phaseprobe.cuda.module.__index"] = function() return pick { "jit_ns", "info_log", "ptx_bytes", "context", "closed", "x" } end
H["phaseprobe.cuda.function:launch"] = function(fn) return launch_desc("launch", fn) end
H["phaseprobe.cuda.function:prepare"] = function(fn) return launch_desc("prepare", fn) end
H["phaseprobe.cuda.launch.__index"] = function() return pick { "fn", "iterations", "spin_us", "grid", "x" } end
H["phaseprobe.cuda.function:launch_costs"] = function(fn) return launch_desc("costs", fn) end
H["phaseprobe.cuda.function:max_active_blocks"] = function() return pick { 32, 1024, 0, 1 << 40 }, pick { nil, 0, 1 << 20 } end
H["phaseprobe.cuda.function.__index"] = function() return pick { "name", "params", "param_bytes", "registers", "closed", "x" } end
H["phaseprobe.cuda.global:read"] = function() return pick { nil, 0, 4, 24, 100, -1 }, pick { nil, 0, 4, 30 } end
H["phaseprobe.cuda.global:write"] = function() return pick { "abcd", "", ("x"):rep(30) }, pick { nil, 0, 20 } end
H["phaseprobe.cuda.global:read_u32"] = function() return pick { nil, 0, 4, 22 } end
H["phaseprobe.cuda.global:write_u32"] = function() return pick { 0, 7, -1, 1 << 32 }, pick { nil, 0, 21 } end
H["phaseprobe.cuda.global.__index"] = function() return pick { "ptr", "size", "name", "closed", "x" } end
H["phaseprobe.cuda.buffer:upload"] = function()
  if chance(0.5) then return pick { "abcd", ("y"):rep(100), "" }, pick { nil, 0, 2, 1 << 40 } end
  return opts(number_list(R(20))), pick { "u8", "i32", "u32", "i64", "u64", "f32", "f64", "x", nil }, pick { nil, 0, 8 }
end
H["phaseprobe.cuda.buffer:download"] = function()
  return pick { nil, "u8", "i32", "f32", "f64", "u64", "x" }, pick { nil, 0, 1, 4, 1 << 62, -1, 1 << 61 },
    pick { nil, 0, 4, 64, 1 << 40, -1 }
end
H["phaseprobe.cuda.buffer:memset"] = function() return pick { 0, 255, 256, -1 }, chance(0.3) and from_pool("phaseprobe.cuda.stream") or nil end
H["phaseprobe.cuda.buffer.__index"] = function() return pick { "ptr", "size", "context", "closed", "x" } end
H["phaseprobe.cuda.stream:timed"] = function(st) return launch_desc("timed", nil, st) end
H["phaseprobe.cuda.stream.__index"] = function() return pick { "default", "context", "closed", "x" } end
H["phaseprobe.cuda.stream.__call"] = function() return from_pool("phaseprobe.cuda.context"), opts { non_blocking = chance(0.5) } end
H["phaseprobe.cuda.window:spin_us"] = function() return pick { 0, 0.5, 1, -1, 0 / 0 } end
H["phaseprobe.cuda.window:launch_loop"] = function(w)
  -- a launch prepared earlier (of any function: its memory may have been
  -- freed, its module closed since), or a description
  local p = chance(0.3) and from_pool("phaseprobe.cuda.launch")
  if p then return p end
  return launch_desc("loop", nil, w)
end
H["phaseprobe.cuda.window.__index"] = function() return pick { "stage", "probe_ns", "kernel_src", "cupti_why", "stream", "x" } end

H["records.read"] = function() return read_path(), parse_opts() end
H["records.read_many"] = function() return { read_path(), read_path() }, parse_opts() end
H["records.from_string"] = function() return log_text(), parse_opts() end
H["records.from_lines"] = function() return lines_iter(), parse_opts() end
H["records.from_store"] = function() return parse_opts() end
H["records.from_list"] = function() return records_list(), chance(0.3) and { prefix = "lst" } or nil end
H["records.wrap"] = function() return from_pool("phaseprobe.columns") or sample_cols, from_pool("phaseprobe.selection") end
H["records.is_set"] = function() return set_value() end
H["records.set:where"] = function()
  if chance(0.3) then return pick { "seq>1", "n!=x", "seq<=18446744073709551616", "x", "a=", "=1" } end
  return field(), pick { 1, "x", false, { 1, 3 } }
end
H["records.set:range"] = function() return field(), number(), number() end
H["records.set:filter"] = function() return callback() end
H["records.set:head"] = function() return pick { 0, 1, 3, 1000, -1, 0 / 0 } end
H["records.set:select"] = function() return field(), field() end
H["records.set:group"] = function() return field() end
H["records.set:summary"] = function() return field() end
H["records.set:summaries"] = function() return { field(), field() } end
H["records.set:values"] = function() return field() end
H["records.set:distinct"] = function() return field(), pick { nil, 1, 10 } end
H["records.set:fit"] = function() return field(), field() end
H["records.set:fits"] = function() return { field() }, { field() } end
H["records.set:lincomb"] = function() return { { field(), 1 } }, chance(0.3) and 0 or nil end
H["records.set:view"] = function() return chance(0.5) and { field(), field() } or nil, pick { nil, 1, 5 } end
H["records.set:record"] = function() return small_int() end
H["records.set:row"] = H["records.set:record"]
H["records.set:line"] = H["records.set:record"]
H["records.set:has"] = function() return field() end
H["records.groups:get"] = function() return pick { "x", "y", 1, nil } end
H["records.groups:summary"] = function() return field() end
local function out_path() return pick(OUT_FILES) end
H["export.csv"] = function() return set_value(), out_path() end
H["export.jsonl"] = H["export.csv"]
H["export.trace"] = function() return set_value(), out_path(), chance(0.3) and { name = "run" } or nil end
H["export.trace_runs"] = function() return { { name = "a", set = set_value() } }, out_path() end
H["export.trace_text"] = function() return { { name = "a", set = set_value() } } end
H["export.read_csv"] = function() return pick { FILES.csv, FILES.jsonl, FILES.dir, FILES.missing, "/dev/zero" },
  { max_bytes = pick { 100, 1 << 20 } } end
H["export.read_jsonl"] = function() return pick { FILES.jsonl, FILES.csv, FILES.dir, FILES.missing, "/dev/zero" },
  { max_bytes = pick { 100, 1 << 20 } } end
H["export._encode"] = function() return any(), "fuzz" end
H["records.concat"] = function() return { set_value(), set_value() } end
-- (sets over one store: a set and parts of it)
H["records.union"] = function()
  local s = set_value()
  local ok, part = pcall(s.head, s, R(3))
  return { s, ok and part or s, chance(0.1) and set_value() or nil }
end
H["records.equal"] = function()
  return set_value(), field(), pick { "1", "0", "18446744073709551615", "cjk", "a b", "", 7, 2.5, true }
end
H["records.set:layout"] = function() return nil end
H["records.set:per_record"] = function() return field() end
H["pp.parse.list"] = function()
  return records_list(), opts { prefix = pick { nil, "lst", "9bad" }, fields = { field(), "seq" },
    text = pick { nil, "line", "any", "x" }, source = pick { nil, "src" }, lines = chance(0.3) and { 1, 2 } or nil }
end
H["phaseprobe.record:_text"] = function() return field() end
H["phaseprobe.record.__index"] = function() return pick { field(), "_prefix", "_fields", "_table", "_text", 1 } end
H["record.layout"] = function() return pick { { "seq", "wall_ns", "kernel_ns", "a_ns", "sub_a_x_ns" }, {} },
  chance(0.5) and function() return "integer" end or nil end
H["record.short"] = function() return pick { "ptx_ns", "sub_ptx_vsa_ns", "a" } end
H["record.u"] = function() return from_pool(REC) or {}, field() end
H["record.sat_add"] = function() return R(1000), pick { R(1000), math.maxinteger } end

-- Calls that spin, sleep, launch or read by design are kept short; paths
-- that would be read to a large cap get a small max_bytes.
local function tame(e, a, n)
  local name = e.name
  local function clamp(i, hi)
    if type(a[i]) == "number" and not (a[i] >= 0 and a[i] <= hi) then a[i] = hi end
  end
  if name == "pp.cuda.spin_us" then clamp(1, 1) end
  if name:match(":spin_us$") then clamp(2, 1) end
  if name:match("event_costs$") then clamp(2, 5) end
  for i = 1, n do
    local v = a[i]
    if type(v) == "table" then
      local raw = rawget
      if type(raw(v, "iterations")) == "number" and not (raw(v, "iterations") <= 3) then v.iterations = 3 end
      if type(raw(v, "samples")) == "number" and not (raw(v, "samples") <= 5) then v.samples = 5 end
      if type(raw(v, "spin_us")) == "number" and not (raw(v, "spin_us") <= 1) then v.spin_us = 1 end
    elseif v == "/dev/zero" and name:match(":file$") then
      a[i] = "/dev/null" -- the parser's own cap may be the default
    elseif v == "/dev/zero" and (name == "pp.parse.file" or name:match("^records%.read")) then
      -- (the line parsers read /dev/zero to their cap, 8 GiB by default;
      -- every other reader stops within its first MiB at its default cap)
      local o = a[i + 1]
      if type(o) ~= "table" or getmetatable(o) ~= nil then
        o = {}
        a[i + 1] = o
        if n < i + 1 then n = i + 1 end
      end
      if not (type(rawget(o, "max_bytes")) == "number" and rawget(o, "max_bytes") <= (1 << 20)) then
        o.max_bytes = 1 << 20
      end
    end
  end
  local to = name == "pp.sink" and "/sink.log" or name == "pp.notices" and "/notices.log"
  if to and type(a[1]) ~= "string" and not (math.type(a[1]) == "integer" and (a[1] < 0 or a[1] >= 1000)) then
    a[1] = "none"
  end
  if to and type(a[1]) == "string" and a[1] ~= "none" and a[1] ~= "/dev/null"
    and not (name == "pp.notices" and a[1] == "stderr") then
    a[1] = SCRATCH .. to
  end
  if name == "phaseprobe.cuda.context:alloc" and type(a[2]) == "number" and a[2] > (1 << 24) and a[2] < (1 << 28) then
    a[2] = 1 << 20
  end
  return n
end

-- ---- calls ------------------------------------------------------------------
local trace = false

local function describe(v)
  local t = type(v)
  if t == "string" then
    if #v > 24 then return ("<string %d>"):format(#v) end
    return ("%q"):format(v):gsub("\n", "n")
  end
  if t == "number" then return tostring(v) end
  if t == "table" or t == "userdata" then
    local c = class_of(v)
    if c then return "<" .. c .. ">" end
    return "<" .. t .. (getmetatable(v) and " with metatable" or "") .. ">"
  end
  return "<" .. t .. ">"
end

-- Makers of an object in the state a method needs to succeed (a window
-- collected before w:wait, one open before w:launch_loop), by entry name:
-- used for half the calls of those methods. Filled in below, after the
-- helpers that make objects.
local SELF = {}

local function args_for(e)
  local a, n = {}, 0
  local self
  local make = SELF[e.name]
  if make and chance(0.5) then self = make() end
  if e.class and self == nil then
    local closes = e.name:match("__gc$") or e.name:match("__close$") or e.name:match(":close$")
      or e.name:match(":free$") or e.name:match(":discard$")
    if CLOSERS[e.class] and not closes and chance(0.8) then self = open_one(e.class) end
    if self == nil then self = from_pool(e.class) end
    if self == nil or chance(0.05) then self = wrong_object() end
    if e.class == REC and chance(0.5) then self = from_pool(REC) end
  end
  local h = H[e.name]
  if h and chance(0.9) then
    local r = table.pack(h(self))
    for i = 1, r.n do a[i] = r[i] end
    n = r.n
  else
    n = R(4) - 1
    for i = 1, n do a[i] = any() end
  end
  -- hostility on top of plausible arguments
  if n > 0 and chance(0.1) then a[R(n)] = any() end
  if chance(0.03) then n = n + 1; a[n] = any() end
  if e.class then
    table.insert(a, 1, self)
    n = n + 1
  end
  return a, tame(e, a, n)
end

local function note_result(ok, ...)
  if not ok then return end
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    keep(v)
    if type(v) == "table" and getmetatable(v) == nil then
      -- lists of records, groups: keep a few of their members
      for j = 1, 3 do
        local x = rawget(v, j)
        if x ~= nil then keep(x) end
      end
      for _, k in ipairs { "sel", "set", "cols" } do
        local x = rawget(v, k)
        if x ~= nil then keep(x) end
      end
    end
  end
end

call_entry = function(e)
  depth = depth + 1
  local a, n = args_for(e)
  total = total + 1
  e.calls = e.calls + 1
  if trace or total == TRACE_FROM then
    trace = true
    local parts = {}
    for i = 1, n do parts[i] = describe(a[i]) end
    io.stderr:write(("[%d] %s(%s)\n"):format(total, e.name, table.concat(parts, ", ")))
    io.stderr:flush()
  end
  local r = table.pack(pcall(e.fn, table.unpack(a, 1, n)))
  if r[1] then e.ok = e.ok + 1 end
  if not r[1] and e.name:match("%.__eq$") then
    -- == calls __eq for any two userdata when one has it: an __eq that
    -- raises makes a plain comparison raise (a finding, like a sanitizer's)
    io.stderr:write(("lua_api_fuzz: FINDING at call %d: %s raised: %s\n"):format(total, e.name, tostring(r[2])))
    os.exit(1)
  end
  if SHOW_ERRORS and not r[1] and e.name:find(SHOW_ERRORS) then
    io.stderr:write(("[%d] %s: %s\n"):format(total, e.name, tostring(r[2])))
  end
  note_result(table.unpack(r, 1, r.n))
  depth = depth - 1
  return r[1]
end

-- Scopes: opened in a coroutine that yields with them open; later resumed,
-- closed (coroutine.close runs their __close) or left to the collector.
local suspended = {}
local function scope_action()
  local r = R(3)
  if r == 1 or #suspended == 0 then
    local co = coroutine.create(function()
      local _ <close> = pp.phase(phase_name())
      coroutine.yield()
      local _n <close> = pp.nested(nested_name())
      if chance(0.3) then pp.emit() end
      coroutine.yield()
    end)
    pcall(coroutine.resume, co)
    if #suspended < 8 then suspended[#suspended + 1] = co end
  elseif r == 2 then
    local i = R(#suspended)
    pcall(coroutine.resume, suspended[i])
  else
    local i = R(#suspended)
    pcall(coroutine.close, table.remove(suspended, i))
  end
end

-- Objects get closed often (by the fuzz itself): now and then a fresh one
-- of each kind is made the plausible way, so that calls on open objects
-- keep happening. These calls count like the others.
local function direct(name, f, ...)
  local e = by_name[name]
  total = total + 1
  if e then e.calls = e.calls + 1 end
  if trace or total == TRACE_FROM then
    trace = true
    io.stderr:write(("[%d] %s (making an object to work on)\n"):format(total, name))
  end
  local r = table.pack(pcall(f, ...))
  if r[1] and e then e.ok = e.ok + 1 end
  note_result(table.unpack(r, 1, r.n))
  if r[1] then return r[2] end
  return nil
end


local function need_ctx()
  return open_one("phaseprobe.cuda.context") or direct("pp.cuda.context", pp.cuda.context, 0)
end

local function need_mod()
  local m = open_one("phaseprobe.cuda.module")
  if m then return m end
  local ctx = need_ctx()
  return ctx and direct("phaseprobe.cuda.context:load", ctx.load, ctx,
    chance(0.7) and KINDS_PTX or SAXPY_PTX)
end

local function need_stream()
  local st = open_one("phaseprobe.cuda.stream")
  if st and chance(0.7) then return st end
  local ctx = need_ctx()
  if not ctx then return nil end
  if chance(0.5) then return direct("phaseprobe.cuda.stream.__call", ctx.stream, ctx) end
  st = ctx.stream
  keep(st)
  return st
end

local function refill()
  local r = R(10)
  if r <= 4 then
    local mod = need_mod()
    if mod then
      direct("phaseprobe.cuda.module:func", mod.func, mod, pick { "kinds", "noargs", "two", "saxpy" })
    end
  elseif r == 5 then
    local mod = need_mod()
    if mod then direct("phaseprobe.cuda.module:global", mod.global, mod, pick { "counter", "blob" }) end
  elseif r == 6 then
    local ctx = need_ctx()
    if ctx then direct("phaseprobe.cuda.context:alloc", ctx.alloc, ctx, pick { 4, 64, 4096 }) end
  elseif r == 7 then
    local st = need_stream()
    if st then direct("phaseprobe.cuda.stream:window", st.window, st) end
  elseif r == 8 then
    direct("pp.parse.new", pp.parse.new)
  elseif r == 9 then
    direct("pp.parse.string", pp.parse.string, log_text())
  else
    direct("records.from_string", records.from_string, log_text())
  end
end

local function begin_some()
  if chance(0.5) then pcall(pp.enable) end
  if not pp.is_open() then pcall(pp.begin) end
end

-- A fresh window on an open stream (the stream's context's own function
-- comes with the launch description).
local function fresh_window()
  local st = need_stream()
  return st and direct("phaseprobe.cuda.stream:window", st.window, st,
    chance(0.3) and { source = pick { "event", "cupti" } } or nil)
end
SELF["phaseprobe.cuda.window:launch_loop"] = fresh_window
-- w:wait reads a collected window: launched (mostly), closed, collected.
SELF["phaseprobe.cuda.window:wait"] = function()
  local w = fresh_window()
  if not w then return nil end
  if chance(0.8) then
    direct("phaseprobe.cuda.window:launch_loop", w.launch_loop, w, launch_desc("loop", nil, w))
  end
  direct("phaseprobe.cuda.window:close", w.close, w)
  direct("phaseprobe.cuda.window:collect", w.collect, w)
  return w
end
SELF["phaseprobe.cuda.window:collect"] = function()
  local w = fresh_window()
  if w then direct("phaseprobe.cuda.window:close", w.close, w) end
  return w
end
-- calibrating refuses while a dispatch is open on the thread (and the
-- random steps open dispatches often): most calls get none open
SELF["phaseprobe.cuda.context:calibrate_events"] = function()
  if pp.is_open() and chance(0.8) then direct("pp.emit", pp.emit) end
  return open_one("phaseprobe.cuda.context") or need_ctx()
end

-- Entry points that raise whatever they are given, by design: none of
-- them ever returns normally, and that is what is checked of them.
local BY_DESIGN = {
  ["phaseprobe.record.__newindex"] = "records are read-only",
  ["record._fields[]="] = "a record's field list is read-only",
  ["phaseprobe.groups_guard.__gc"] = "an object the module never hands to Lua: called by hand, only on another value",
  ["phaseprobe.ptx_result.__gc"] = "an object the module never hands to Lua: called by hand, only on another value",
}

-- ---- the run ------------------------------------------------------------------
-- The warm-up: every entry point called (up to three times, until one call
-- returns), and again for the classes that this made the module register,
-- until no new class appears.
local done = 0
repeat
  local upto = #entries
  for i = done + 1, upto do
    for _ = 1, 3 do
      if call_entry(entries[i]) then break end
    end
  end
  done = upto
  scan_registry()
until #entries == done
local warm_calls = total

if not QUIET then
  io.stderr:write(("lua_api_fuzz: seed %d, %d entry points (after a warm-up of %d calls), up to %d calls%s\n")
    :format(SEED, #entries, warm_calls, CALLS, SECONDS > 0 and (" or " .. SECONDS .. " s") or ""))
end

local function note_late(names)
  for _, c in ipairs(names) do found_late[#found_late + 1] = ("%s (call %d)"):format(c, total) end
end

local stopped_by_time = false
local steps = 0
while total < CALLS do
  if SECONDS > 0 and total % 256 == 0 and os.time() - t_start >= SECONDS then
    stopped_by_time = true
    break
  end
  steps = steps + 1
  if steps % 1024 == 0 then note_late(scan_registry()) end
  local r = random()
  if r < 0.02 then
    collectgarbage()
  elseif r < 0.06 then
    collectgarbage("step", R(200))
  elseif r < 0.08 then
    scope_action()
  elseif r < 0.10 then
    begin_some()
  elseif r < 0.16 then
    refill()
  end
  call_entry(entries[R(#entries)])
  if not QUIET and total % 100000 < 1 then
    io.stderr:write(("lua_api_fuzz: seed %d: %d calls, %.0f s\n"):format(SEED, total, os.clock() - clock0))
  end
end
for i = #suspended, 1, -1 do pcall(coroutine.close, suspended[i]) end
pcall(pp.sink, "none")
note_late(scan_registry()) -- a class first made at the very end is unreached

-- ---- the report ----------------------------------------------------------------
-- Besides the table: "never_returned: NAMES" (not by design, space
-- separated, "-" for none), which fuzz/lua_api_fuzz.sh intersects over its
-- runs.
local unreached, never_ok, by_design, wrong = {}, {}, {}, {}
local lines = {}
for _, e in ipairs(entries) do
  if e.calls == 0 then unreached[#unreached + 1] = e.name end
  if BY_DESIGN[e.name] then
    if e.ok == 0 then by_design[#by_design + 1] = e.name else wrong[#wrong + 1] = e.name end
  elseif e.calls > 0 and e.ok == 0 then
    never_ok[#never_ok + 1] = e.name
  end
  lines[#lines + 1] = ("  %-44s %8d calls %8d returned%s"):format(e.name, e.calls, e.ok,
    BY_DESIGN[e.name] and ("   (raises by design: " .. BY_DESIGN[e.name] .. ")") or "")
end
print(("lua_api_fuzz: seed %d: %d calls over %d entry points in %.1f s cpu, no sanitizer report")
  :format(SEED, total, #entries, os.clock() - clock0))
if not QUIET then print(table.concat(lines, "\n")) end
if not QUIET and #found_late > 0 then
  print("classes found after the warm-up: " .. table.concat(found_late, ", "))
end
print(("reached %d of %d entry points; %d never returned normally%s; %d raise by design%s"):format(
  #entries - #unreached, #entries, #never_ok, #never_ok > 0 and (": " .. table.concat(never_ok, ", ")) or "",
  #by_design, #by_design > 0 and (": " .. table.concat(by_design, ", ")) or ""))
print("never_returned: " .. (#never_ok > 0 and table.concat(never_ok, " ") or "-"))
if #wrong > 0 then
  -- an entry point that must always raise returned: a defect
  print("RETURNED, THOUGH IT MUST RAISE: " .. table.concat(wrong, ", "))
  os.exit(1)
end
if #unreached > 0 and not stopped_by_time then
  print("NOT REACHED: " .. table.concat(unreached, ", "))
  os.exit(1)
end
os.exit(0, true)
