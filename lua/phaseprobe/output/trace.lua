-- phaseprobe.output.trace: records as a Chrome trace-event JSON document
-- (Perfetto UI, chrome://tracing).
--
--   trace.trace(set, path [, opts])   opts.name: process name
--   trace.trace_runs(runs, path [, stream])
--                                     the same, one process per run:
--                                     runs = { {name = string, set = records}, ... }
--   trace.trace_text(runs)            -> the trace as a string
--
-- Sits after the record sets in the flow; the JSON text of its events comes
-- from output/json.lua. Integer args past 2^63-1 are written as strings
-- (trace readers parse integers as int64).
local record = require "phaseprobe.record"
local records = require "phaseprobe.records"
local files = require "phaseprobe.output.files"
local json = require "phaseprobe.output.json"
local cjson = require("cjson").new() -- own instance: no global settings touched

local M = {}

local encode, record_json = json.encode, json.record_json
local array, us, raw, us_text = json.array, json.us, json.raw, json.us_text
local key_cache = setmetatable({}, { __index = function(t, k)
  local e = json.key_text(k)
  rawset(t, k, e)
  return e
end })

local PHASE_LAYOUT = "Phases are a partition of charged host time, not a record of when each ran: "
  .. "within a dispatch they are laid end to end from its start in schema order, then an "
  .. "'unattributed' slice holds the residue (wall_ns - named_host_ns). Nested regions (sub_*) "
  .. "are laid end to end inside the phase they were measured in. Zero-length phases are left out."
local DEVICE_LAYOUT = "Device slices have their measured durations (device_window_ns, kernel_ns); "
  .. "their positions are modelled: the outer window starts where its start event is recorded "
  .. "(the end of the stage phase), the kernel window at the start of the launch phase, both kept "
  .. "inside the dispatch where they fit."
local END_TO_END = "No absolute start times (start_ns absent or 0): dispatches are laid end to end "
  .. "per thread in record order; gaps between dispatches are not known."
local ABSOLUTE = "Dispatches start at their recorded start_ns, relative to the run's first "
  .. "(time_base_ns)."
local TOO_WIDE = "start_ns values span more than 2^50 ns (13 days), too wide for exact microsecond "
  .. "timestamps: dispatches are laid end to end per thread in record order instead."

-- Timestamps are written in microseconds with three decimals and read back
-- as doubles: a run must stay within 2^50 ns of its first dispatch for them
-- to keep every nanosecond.
local MAX_SPAN = 1 << 50

local DEVICE_TID_BASE = 1000000000

local function phase_offsets(r, L)
  -- offsets (ns from the dispatch start) and durations of each phase, laid end
  -- to end in schema order
  local at, list = 0, {}
  for _, p in ipairs(L.phases) do
    local d = record.u(r, p)
    list[#list + 1] = { label = p, at = at, dur = d }
    at = record.sat_add(at, d)
  end
  return list, at
end

-- Where the device window and the kernel window start, as offsets from the
-- dispatch start: after "stage" and at "launch" where the schema has them.
local function device_offsets(phases)
  local after_stage, launch
  for _, ph in ipairs(phases) do
    if ph.label == "stage_ns" then after_stage = ph.at + ph.dur end
    if ph.label == "launch_ns" then launch = ph.at end
  end
  return after_stage or 0, launch
end

local function clamp(v, lo, hi)
  if hi < lo then return lo end
  if v < lo then return lo end
  if v > hi then return hi end
  return v
end

-- A run's records with their tracks and start times.
local function plan_run(records)
  local absolute = #records > 0
  for _, r in ipairs(records) do
    if record.u(r, "start_ns") == 0 then
      absolute = false
      break
    end
  end
  local order = {}
  for i = 1, #records do order[i] = i end
  local base = 0
  if absolute then
    table.sort(order, function(a, b)
      local sa, sb = record.u(records[a], "start_ns"), record.u(records[b], "start_ns")
      if sa ~= sb then return sa < sb end
      return a < b
    end)
    base = record.u(records[order[1]], "start_ns")
    local last = record.u(records[order[#order]], "start_ns")
    if last - base > MAX_SPAN then
      local o = {}
      for i = 1, #records do o[i] = i end
      return { absolute = false, order = o, base = 0, too_wide = true }
    end
  end
  return { absolute = absolute, order = order, base = base }
end

-- A dispatch's args: the whole record (keys in line order), then `extra`.
local function record_args(r, i, extra)
  local text = record_json(r, i, true)
  local more = {}
  for _, k in ipairs { "shifted_ns", "note" } do
    if extra[k] ~= nil then more[#more + 1] = key_cache[k] .. encode(extra[k]) end
  end
  if #more > 0 then text = text:sub(1, -2) .. (#text > 2 and "," or "") .. table.concat(more, ",") .. "}" end
  return raw(text)
end

-- Emits the events of one run through `emit(event)`; returns its metadata.
local function run_events(run, pid, tids, emit)
  local set = run.set
  local records = {}
  for i = 1, set:count() do records[i] = set:record(i) end
  local L = set:layout()
  local plan = plan_run(records)
  emit { name = "process_name", ph = "M", pid = pid, args = { name = run.name } }
  emit { name = "process_sort_index", ph = "M", pid = pid, args = { sort_index = pid } }
  emit { name = "process_labels", ph = "M", pid = pid,
    args = { labels = plan.absolute and "absolute start times" or "dispatches laid end to end" } }

  local tracks = {} -- host tid -> { tid =, dev =, ker =, host_end =, dev_end =, ker_end = }
  local ntracks = 0
  local shifted = 0
  local function track(r)
    local real = record.u(r, "tid")
    local t = tracks[real]
    if t then return t end
    ntracks = ntracks + 1
    local tid = real
    if tids.used[tid] then -- the same thread id in another run: keep tracks apart
      tids.next = tids.next + 1
      tid = tids.next
    end
    tids.used[tid] = true
    tids.next = tids.next + 1
    local dev = tids.next
    tids.next = tids.next + 1
    local ker = tids.next
    t = { tid = tid, dev = dev, ker = ker, host_end = 0, dev_end = 0, ker_end = 0 }
    tracks[real] = t
    local label = real ~= 0 and ("host thread " .. real) or "host thread (tid not recorded)"
    emit { name = "thread_name", ph = "M", pid = pid, tid = tid, args = { name = label } }
    emit { name = "thread_name", ph = "M", pid = pid, tid = dev,
      args = { name = "device window (" .. label .. ")" } }
    emit { name = "thread_name", ph = "M", pid = pid, tid = ker,
      args = { name = "kernel only (" .. label .. ")" } }
    emit { name = "thread_sort_index", ph = "M", pid = pid, tid = tid, args = { sort_index = 3 * ntracks } }
    emit { name = "thread_sort_index", ph = "M", pid = pid, tid = dev, args = { sort_index = 3 * ntracks + 1 } }
    emit { name = "thread_sort_index", ph = "M", pid = pid, tid = ker, args = { sort_index = 3 * ntracks + 2 } }
    return t
  end

  for _, i in ipairs(plan.order) do
    local r = records[i]
    local t = track(r)
    local phases, named = phase_offsets(r, L)
    local wall = r.wall_ns ~= nil and record.u(r, "wall_ns") or named
    local dur = math.max(wall, named)
    local start
    if plan.absolute then
      start = record.u(r, "start_ns") - plan.base
      if start < t.host_end then
        shifted = shifted + 1
        start = t.host_end
      end
    else
      start = t.host_end
    end
    t.host_end = record.sat_add(start, dur)

    local extra = {}
    if r.start_ns ~= nil and plan.absolute and start ~= record.u(r, "start_ns") - plan.base then
      extra.shifted_ns = start - (record.u(r, "start_ns") - plan.base)
    end
    if named > wall then extra.note = "named phases exceed wall_ns: the slice is as long as their sum" end
    emit { name = "dispatch", cat = "host", ph = "X", pid = pid, tid = t.tid, ts = us(start), dur = us(dur),
      args = record_args(r, i, extra) }

    for _, ph in ipairs(phases) do
      if ph.dur > 0 then
        emit { name = record.short(ph.label), cat = "phase", ph = "X", pid = pid, tid = t.tid,
          ts = us(start + ph.at), dur = us(ph.dur), args = { [ph.label] = ph.dur } }
        -- nested regions measured inside this phase, end to end from its start
        local at = 0
        for _, n in ipairs(L.nested) do
          local nd = record.u(r, n)
          if L.parent[n] == ph.label and nd > 0 then
            local d = math.min(nd, ph.dur - at)
            if d > 0 then
              local nargs = { [n] = nd }
              if d < nd then nargs.note = "clipped to the enclosing phase" end
              emit { name = n:gsub("_ns$", ""), cat = "nested", ph = "X", pid = pid, tid = t.tid,
                ts = us(start + ph.at + at), dur = us(d), args = nargs }
              at = at + d
            end
          end
        end
      end
    end
    if dur > named then
      emit { name = "unattributed", cat = "phase", ph = "X", pid = pid, tid = t.tid,
        ts = us(start + named), dur = us(dur - named), args = { unattributed_ns = dur - named } }
    end

    -- device tracks
    local window, kernel = record.u(r, "device_window_ns"), record.u(r, "kernel_ns")
    local after_stage, launch_at = device_offsets(phases)
    local dstart
    if window > 0 then
      dstart = start + clamp(after_stage, 0, dur - window)
      dstart = math.max(dstart, t.dev_end)
      t.dev_end = dstart + window
      emit { name = "device window", cat = "device", ph = "X", pid = pid, tid = t.dev, ts = us(dstart),
        dur = us(window), args = { device_window_ns = window, kernel_ns = kernel,
          starvation_ns = math.max(0, window - kernel), seq = r.seq } }
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
      emit { name = "kernel", cat = "device", ph = "X", pid = pid, tid = t.ker, ts = us(kstart),
        dur = us(kernel), args = { kernel_ns = kernel, kernel_src = r.kernel_src,
          kernel_floor_ns = r.kernel_floor_ns, seq = r.seq } }
    end
  end
  return {
    pid = pid,
    name = run.name,
    records = #records,
    timestamps = plan.absolute and "absolute" or "end_to_end",
    time_base_ns = plan.absolute and plan.base or nil,
    note = plan.absolute and ABSOLUTE or plan.too_wide and TOO_WIDE or END_TO_END,
    shifted = shifted > 0 and shifted or nil,
  }
end

local function check_runs(runs)
  if type(runs) ~= "table" or #runs == 0 then
    error("export.trace_runs: expected a list of runs { {name=, set=}, ... }", 3)
  end
  for i, run in ipairs(runs) do
    if type(run) ~= "table" or type(run.name) ~= "string" or not records.is_set(run.set) then
      error(("export.trace_runs: run %d must be { name = string, set = a record set }"):format(i), 3)
    end
  end
end

local function version()
  local ok, pp = pcall(require, "phaseprobe")
  return ok and type(pp) == "table" and pp.version or "unknown"
end

-- Slice and category names: few, and on every event.
local name_cache = setmetatable({}, { __index = function(t, k)
  local e = cjson.encode(k)
  rawset(t, k, e)
  return e
end })

-- A complete ("X") event; the same text encode() makes, without its
-- general walk (the trace is mostly these).
local function encode_slice(ev)
  return table.concat { '{"args":', encode(ev.args or {}, "trace event"), ',"cat":', name_cache[ev.cat],
    ',"dur":', us_text(ev.dur.ns), ',"name":', name_cache[ev.name], ',"ph":"X","pid":', tostring(ev.pid),
    ',"tid":', tostring(ev.tid), ',"ts":', us_text(ev.ts.ns), "}" }
end

-- The trace as text, produced piecewise through `write`.
local function write_trace(runs, write)
  write('{"traceEvents":[\n')
  local first = true
  local tids = { used = {}, next = DEVICE_TID_BASE }
  local metas = array()
  for pid, run in ipairs(runs) do
    metas[#metas + 1] = run_events(run, pid, tids, function(ev)
      if not first then write(",\n") end
      first = false
      write(ev.ph == "X" and encode_slice(ev) or encode(ev, "trace event"))
    end)
  end
  local meta = {
    phaseprobe = {
      format = "phaseprobe-trace/1",
      version = version(),
      units = "ts and dur are microseconds with three decimals: exact nanoseconds; args hold "
        .. "exact integers, and u64 values above 2^63-1 (saturated counters) as strings of their digits",
      phase_layout = PHASE_LAYOUT,
      device_layout = DEVICE_LAYOUT,
      runs = metas,
    },
  }
  write('\n],\n"metadata":')
  write(encode(meta, "trace metadata"))
  write("}\n")
end

function M.trace_runs(runs, path, stream)
  check_runs(runs)
  local w, err = files.open_out(path, "export.trace", stream)
  if not w then return nil, err end
  local ok, e = pcall(write_trace, runs, w.write)
  if not ok then
    w.close()
    error(e, 0)
  end
  return w.close()
end

-- opts.name: the process name (default "phaseprobe").
function M.trace(set, path, opts)
  opts = opts or {}
  json.check_set(set, "export.trace")
  return M.trace_runs({ { name = opts.name or "phaseprobe", set = set } }, path)
end

-- The trace document as a string (for callers that want it in memory).
function M.trace_text(runs)
  check_runs(runs)
  local out = {}
  write_trace(runs, function(s) out[#out + 1] = s end)
  return table.concat(out)
end


return M
