-- lua_api_fuzz_args.lua: the Lua API fuzzer's plausible arguments, by
-- entry point (H: the name of an entry point -> a function of the object a
-- method is called on that returns its arguments), and tame, which keeps
-- short the calls that spin, sleep, launch or read by design. An entry
-- point without a row here is called with arbitrary values; a new entry
-- point is fuzzed without one.
--
-- Split out of fuzz/lua_api_fuzz.lua, the driver, which loads it with its
-- own random choices, pools and paths (D) and the values of
-- fuzz/lua_api_fuzz_values.lua (V), and calls H's rows and tame for nine
-- calls in ten.
local D, V = ...
local R, chance, pick, pp = D.R, D.chance, D.pick, D.pp
local from_pool, REC, sample_cols, SCRATCH = D.from_pool, D.REC, D.sample_cols, D.SCRATCH
local PTX_TEXTS, FUNC_NAMES, GLOBAL_NAMES = V.PTX_TEXTS, V.FUNC_NAMES, V.GLOBAL_NAMES
local FIELD_NAMES, FILES, OUT_FILES = V.FIELD_NAMES, V.FILES, V.OUT_FILES
local number, small_int, string_value, number_list = V.number, V.small_int, V.string_value, V.number_list
local phase_name, nested_name, callback, any, opts = V.phase_name, V.nested_name, V.callback, V.any, V.opts
local read_path, log_text, lines_iter = V.read_path, V.log_text, V.lines_iter
local parse_opts, ptx_opts, schema_def = V.parse_opts, V.ptx_opts, V.schema_def
local set_value, records_list, launch_desc = V.set_value, V.records_list, V.launch_desc

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

return H, tame
