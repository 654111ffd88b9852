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
-- objects, makes the calls and reports. It loads two parts from beside
-- itself: what the calls are made of (files, plausible and hostile
-- values: fuzz/lua_api_fuzz_values.lua) and the plausible arguments of
-- each entry point, with the limits on calls that spin, sleep or read
-- (fuzz/lua_api_fuzz_args.lua).
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
-- What the calls are made of (fuzz/lua_api_fuzz_values.lua), and the
-- plausible arguments of each entry point with the limits on those that
-- spin, sleep or read (fuzz/lua_api_fuzz_args.lua): files beside this one,
-- loaded with what they take from here.
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
local H, tame = part("lua_api_fuzz_args", D, V)

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
