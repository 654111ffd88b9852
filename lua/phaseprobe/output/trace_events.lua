-- phaseprobe.output.trace_events: the text of a trace's events, for
-- output/trace.lua, which plans each run and writes the document.
--
--   events.TRACKS                  the tracks a dispatch is drawn on (host,
--                                  device): trace.TRACKS is this table
--   events.meta(pid, tid, name, args)
--                                  a metadata event ("ph":"M")
--   events.fast_args(fields, kinds)
--                                  a record's args JSON in one format, for
--                                  a run whose columns allow it (or nil)
--   events.value_json, events.arg_text
--                                  an arg's value text, exact
--   events.u(v)                    a column's value as a duration or time
--                                  in ns, saturated at 2^63-1 (their sums:
--                                  record.sat_add)
--   events.key_text, events.str_text
--                                  cached JSON texts of keys and strings
--
-- Every event's text starts with ",\n" (the writer cuts the first one's).
-- Durations and timestamps are written in microseconds with three decimals
-- (exact nanoseconds); every arg is the record's own value, exact.
local record = require "phaseprobe.record"
local json = require "phaseprobe.output.json"
local cjson = require("cjson").new() -- own instance: no global settings touched

local M = {}

local encode = json.encode
local number_text = json.number_text
local key_cache = setmetatable({}, { __index = function(t, k)
  local e = json.key_text(k)
  rawset(t, k, e)
  return e
end })
local str_cache = setmetatable({}, { __mode = "k", __index = function(t, k)
  local e = cjson.encode(k)
  rawset(t, k, e)
  return e
end })

-- ---- values ---------------------------------------------------------------------

local function clamp(v, lo, hi)
  if hi < lo then return lo end
  if v < lo then return lo end
  if v > hi then return hi end
  return v
end

-- A value read from a column, as a duration or a time in ns: a u64 past
-- 2^63-1 (a float in Lua) saturates at 2^63-1, a negative value or a NaN is
-- 0. (The args keep the exact value: see arg_text.)
local function u(v)
  if v == nil then return 0 end
  if math.type(v) == "integer" then return v < 0 and 0 or v end
  if v ~= v or v < 0 then return 0 end
  if v >= 2 ^ 63 then return math.maxinteger end
  return math.floor(v)
end

local sat_add = record.sat_add

-- ---- events ---------------------------------------------------------------------

-- The events' templates take integers (%d, %03d) and text (%s) only:
-- pp.text.format builds them in C, without the C library's printf, which
-- was most of the time of a trace with every dispatch drawn.
local format = require("phaseprobe").text.format

-- The value text of an arg: integers exact (past 2^63-1 as strings),
-- floats as exported, strings escaped.
-- (big(i): the record, for the exact digits of a u64 past 2^63-1, which
-- reaches Lua as a float; written as a string, as trace readers parse
-- integers as int64)
local arg_text
local function value_json(v, k, big)
  if math.type(v) == "integer" then
    return tostring(v)
  elseif type(v) == "number" then
    if big and v >= 0x1p63 then return json.value_text(big(), 0, k, v, true) end
    return number_text(v, "trace arg")
  end
  return str_cache[v]
end

-- The arg text of a duration field's value v when it is no plain u64 below
-- 2^63 (which "%d" writes): a u64 past 2^63-1 as a string of its digits
-- (the record's text), a negative or fractional value as it is; nil for a
-- plain one. record(): the record, for the digits.
function arg_text(v, k, record)
  if math.type(v) == "integer" and v >= 0 then return nil end
  if v == nil then return nil end
  return value_json(v, k, record)
end

-- The text of a format string: '%' doubled.
local function lit(text) return (text:gsub("%%", "%%%%")) end

-- A format for one kind of complete event of a run: its args text is
-- given by args_fmt (a format of its own values), then dur, tid and ts.
local function slice_format(pid, cat, name, args_fmt)
  return ',\n{"args":' .. args_fmt .. ',"cat":"' .. lit(cat) .. '","dur":%d.%03d,"name":'
    .. lit(str_cache[name]) .. ',"ph":"X","pid":' .. pid .. ',"tid":%d,"ts":%d.%03d}'
end

--- The tracks a dispatch is drawn on. Each entry is function(run) ->
-- function(d, emit): made once per run (run.pid, run.layout = the
-- record layout, set:layout()), then called per dispatch drawn in full
-- with d = { track = {tid=, dev=, ker=, host_end=, dev_end=, ker_end=},
-- start=, dur=, named=, phases = { {label=, short=, at=, dur=} },
-- args = its args JSON, get = function(field) -> value } (d and its
-- tables are reused from one dispatch to the next); emit(text) writes one
-- event's JSON.
M.TRACKS = {}

M.TRACKS[1] = function(run) -- host: the dispatch, its phases, nested regions, residue
  local pid, L = run.pid, run.layout
  local DISPATCH = slice_format(pid, "host", "dispatch", "%s")
  local UNATTR = slice_format(pid, "phase", "unattributed", '{"unattributed_ns":%d}')
  -- (pft, fmt_s, clipped_s: the same with the arg as text, for a value
  -- that is no plain u64 below 2^63: see arg_text)
  local pf, pft, nested = {}, {}, {}
  for k, p in ipairs(L.phases) do
    pf[k] = slice_format(pid, "phase", record.short(p), "{" .. lit(key_cache[p]) .. "%d}")
    pft[k] = slice_format(pid, "phase", record.short(p), "{" .. lit(key_cache[p]) .. "%s}")
    nested[k] = {}
  end
  for _, nl in ipairs(L.nested) do
    for k, p in ipairs(L.phases) do
      if L.parent[nl] == p then
        local name = nl:gsub("_ns$", "")
        local list = nested[k]
        list[#list + 1] = { label = nl,
          fmt = slice_format(pid, "nested", name, "{" .. lit(key_cache[nl]) .. "%d}"),
          clipped = slice_format(pid, "nested", name, "{" .. lit(key_cache[nl])
            .. '%d,"note":"clipped to the enclosing phase"}'),
          fmt_s = slice_format(pid, "nested", name, "{" .. lit(key_cache[nl]) .. "%s}"),
          clipped_s = slice_format(pid, "nested", name, "{" .. lit(key_cache[nl])
            .. '%s,"note":"clipped to the enclosing phase"}') }
      end
    end
  end
  -- The common case in one string.format (generated for this layout):
  -- every phase and nested region charged, the nested regions within their
  -- phase, some residue. It returns false for any other dispatch, which
  -- then takes the general path below.
  local fast
  do
    local fmts, src, args = { DISPATCH }, {}, { "d.args", "dur // 1000", "dur % 1000", "tid",
      "start // 1000", "start % 1000" }
    local nphases = #L.phases
    local conds = {}
    src[#src + 1] = "local format, F, mtype, MAXI = ...\nreturn function(d, emit)\n"
      .. "  local ph, get = d.phases, d.get\n"
      .. "  local tid, start, dur, named = d.track.tid, d.start, d.dur, d.named\n"
      .. "  if dur <= named or d.inexact or start > MAXI - dur then return false end\n"
    for k = 1, nphases do
      src[#src + 1] = ("  local p%d = ph[%d].dur\n  if p%d <= 0 then return false end\n"
        .. "  local t%d = start + ph[%d].at\n"):format(k, k, k, k, k)
      fmts[#fmts + 1] = pf[k]
      for _, a in ipairs { "p%d", "p%d // 1000", "p%d %% 1000", "tid", "t%d // 1000", "t%d %% 1000" } do
        args[#args + 1] = a:format(k)
      end
      local at = {}
      for j, n in ipairs(nested[k]) do
        local v = ("n%d_%d"):format(k, j)
        src[#src + 1] = ("  local %s = get(%q)\n  if mtype(%s) ~= 'integer' or %s <= 0 then return false end\n")
          :format(v, n.label, v, v)
        local ts = ("(t%d%s)"):format(k, #at > 0 and (" + " .. table.concat(at, " + ")) or "")
        fmts[#fmts + 1] = n.fmt
        for _, a in ipairs { v, v .. " // 1000", v .. " % 1000", "tid", ts .. " // 1000", ts .. " % 1000" } do
          args[#args + 1] = a
        end
        at[#at + 1] = v
      end
      if #at > 0 then conds[#conds + 1] = ("%s > p%d"):format(table.concat(at, " + "), k) end
    end
    if #conds > 0 then
      src[#src + 1] = "  if " .. table.concat(conds, " or ") .. " then return false end\n"
    end
    src[#src + 1] = "  local r, tr = dur - named, start + named\n"
    fmts[#fmts + 1] = UNATTR
    for _, a in ipairs { "r", "r // 1000", "r % 1000", "tid", "tr // 1000", "tr % 1000" } do
      args[#args + 1] = a
    end
    src[#src + 1] = "  emit(format(F, " .. table.concat(args, ", ") .. "))\n  return true\nend\n"
    if #args < 200 then
      local chunk = load(table.concat(src), "=trace host", "t", {})
      fast = chunk and chunk(format, table.concat(fmts), math.type, math.maxinteger)
    end
  end
  return function(d, emit)
    if fast and fast(d, emit) then return end
    local tid, start = d.track.tid, d.start
    local dur = d.dur
    emit(format(DISPATCH, d.args, dur // 1000, dur % 1000, tid, start // 1000, start % 1000))
    for k, ph in ipairs(d.phases) do
      local pd = ph.dur
      if pd > 0 then
        local ts = sat_add(start, ph.at)
        if ph.text then
          emit(format(pft[k], ph.text, pd // 1000, pd % 1000, tid, ts // 1000, ts % 1000))
        else
          emit(format(pf[k], pd, pd // 1000, pd % 1000, tid, ts // 1000, ts % 1000))
        end
        local at = 0
        for _, n in ipairs(nested[k]) do
          local raw = d.get(n.label)
          local nd = u(raw)
          if nd > 0 then
            local len = math.min(nd, pd - at)
            if len > 0 then
              local nts = sat_add(ts, at)
              local text = arg_text(raw, n.label, d.record)
              if text then
                emit(format(len < nd and n.clipped_s or n.fmt_s, text, len // 1000, len % 1000, tid,
                  nts // 1000, nts % 1000))
              else
                emit(format(len < nd and n.clipped or n.fmt, nd, len // 1000, len % 1000, tid,
                  nts // 1000, nts % 1000))
              end
              at = at + len
            end
          end
        end
      end
    end
    if dur > d.named then
      local r, ts = dur - d.named, sat_add(start, d.named)
      emit(format(UNATTR, r, r // 1000, r % 1000, tid, ts // 1000, ts % 1000))
    end
  end
end

M.TRACKS[2] = function(run) -- device: the outer window and the kernel-only window
  local pid, L = run.pid, run.layout
  local stage_k, launch_k
  for k, p in ipairs(L.phases) do
    if p == "stage_ns" then stage_k = k end
    if p == "launch_ns" then launch_k = k end
  end
  local WINDOW = slice_format(pid, "device", "device window",
    '{"device_window_ns":%d,"kernel_ns":%d,"starvation_ns":%d%s}')
  local KERNEL = slice_format(pid, "device", "kernel",
    '{"kernel_floor_ns":%s,"kernel_ns":%d,"kernel_src":%s%s}')
  -- CUPTI's timeline: the kernels where they ran, on the same clock as the
  -- dispatch's start, and the launch call that started them
  local KERNELS = slice_format(pid, "device", "kernels",
    '{"kernels":%d,"kernel_ns":%d,"launch_latency_ns":%d,"host_gap_ns":%d,'
    .. '"device_window_ns":%d,"kernel_src":"cupti"%s}')
  local LAUNCH = ',\n{"args":{"launch_at_ns":%d%s},"cat":"device","name":"launch call","ph":"i","pid":'
    .. pid .. ',"s":"t","tid":%d,"ts":%d.%03d}'
  local has_timeline = false
  for _, f in ipairs(L.fields or {}) do
    if f == "kernel_first_ns" then has_timeline = true end
  end
  local function timeline(d, emit, seq_text)
    local first, last = d.get("kernel_first_ns"), d.get("kernel_last_ns")
    if d.get("kernel_src") ~= "cupti" or first == nil or last == nil then return false end
    first, last = u(first), u(last)
    local t, start = d.track, d.start
    local at = u(d.get("launch_at_ns"))
    local ts = start + at
    emit(format(LAUNCH, at, seq_text, t.ker, ts // 1000, ts % 1000))
    local ks, kd = start + first, math.max(0, last - first)
    emit(format(KERNELS, u(d.get("kernels")), u(d.get("kernel_ns")), u(d.get("launch_latency_ns")),
      u(d.get("host_gap_ns")), u(d.get("device_window_ns")), seq_text, kd // 1000, kd % 1000, t.ker,
      ks // 1000, ks % 1000))
    t.ker_end = math.max(t.ker_end, ks + kd)
    return true
  end
  return function(d, emit)
    local window, kernel = u(d.get("device_window_ns")), u(d.get("kernel_ns"))
    if window == 0 and kernel == 0 then return end
    if has_timeline then
      local seq = d.get("seq")
      if timeline(d, emit, seq ~= nil and (',"seq":' .. value_json(seq)) or "") then return end
    end
    local t, start, dur = d.track, d.start, d.dur
    local after_stage = 0
    if stage_k then
      local ph = d.phases[stage_k]
      after_stage = ph.at + ph.dur
    end
    local launch_at = launch_k and d.phases[launch_k].at or nil
    local seq = d.get("seq")
    local seq_text = seq ~= nil and (',"seq":' .. value_json(seq)) or ""
    local dstart
    if window > 0 then
      dstart = start + clamp(after_stage, 0, dur - window)
      dstart = math.max(dstart, t.dev_end)
      t.dev_end = dstart + window
      emit(format(WINDOW, window, kernel, math.max(0, window - kernel), seq_text,
        window // 1000, window % 1000, t.dev, dstart // 1000, dstart % 1000))
    end
    if kernel > 0 then
      local kstart
      if dstart then
        kstart = clamp(start + (launch_at or after_stage), dstart, dstart + window - kernel)
      else
        kstart = start + clamp(launch_at or 0, 0, dur - kernel)
      end
      kstart = math.max(kstart, t.ker_end)
      t.ker_end = kstart + kernel
      local src, floor = d.get("kernel_src"), d.get("kernel_floor_ns")
      emit(format(KERNEL, floor ~= nil and value_json(floor) or "null", kernel,
        src ~= nil and value_json(src) or "null", seq_text, kernel // 1000, kernel % 1000, t.ker,
        kstart // 1000, kstart % 1000))
    end
  end
end

local function meta(pid, tid, name, args)
  return table.concat { ',\n{"args":', encode(args, "trace event"), ',"name":"', name, '","ph":"M","pid":',
    pid, tid and (',"tid":' .. tid) or "", "}" }
end

-- A function(cols, j) -> the args JSON of record j of a chunk, made for
-- a run whose fields are all integer or text columns (at most 100): one
-- string.format per record. It returns nil for a record it cannot write
-- (a field absent, a u64 past 2^63-1, which reaches Lua as a float), which then takes the general
-- path. nil when the run's fields do not allow it.
local function fast_args(fields, kinds)
  if #fields == 0 or #fields > 100 then return nil end
  local fmt, reads, checks, args = {}, {}, {}, {}
  for i, f in ipairs(fields) do
    local k = kinds[i]
    if k ~= "integer" and k ~= "string" then return nil end
    fmt[i] = lit(key_cache[f]) .. (k == "integer" and "%d" or "%s")
    reads[i] = ("c[%d][j]"):format(i)
    checks[i] = k == "integer" and ("mtype(v%d) ~= 'integer'"):format(i) or ("v%d == nil"):format(i)
    args[i] = k == "integer" and ("v" .. i) or ("S[v%d]"):format(i)
  end
  local names = {}
  for i = 1, #fields do names[i] = "v" .. i end
  local src = "local format, F, S, mtype = ...\nreturn function(c, j)\n  local " .. table.concat(names, ", ")
    .. " = " .. table.concat(reads, ", ") .. "\n  if " .. table.concat(checks, " or ")
    .. " then return nil end\n  return format(F, " .. table.concat(args, ", ") .. ")\nend\n"
  local chunk = load(src, "=trace args", "t", {})
  if not chunk then return nil end
  return chunk(format, "{" .. table.concat(fmt, ",") .. "}", str_cache, math.type)
end

M.meta, M.fast_args = meta, fast_args
M.value_json, M.arg_text = value_json, arg_text
M.u = u
M.key_text, M.str_text = key_cache, str_cache

return M
