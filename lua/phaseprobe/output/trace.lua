-- phaseprobe.output.trace: records as a Chrome trace-event JSON document
-- (Perfetto UI, chrome://tracing), written as a stream.
--
--   trace.trace(set, path [, opts])   one run; opts.name: process name
--   trace.trace_runs(runs, path [, stream [, opts]])
--                                     one process per run:
--                                     runs = { {name = string, set = records}, ... }
--                                     -> true, info | nil, message
--   trace.trace_text(runs [, opts])   -> the trace as a string
--
-- opts: limit = dispatches drawn in full per run (default M.LIMIT; a run
-- with more gets its first and last dispatches and its slowest ones in
-- full, and every dispatch in the counter tracks), all = true (every
-- dispatch in full), progress = function(done, total) (called per chunk).
-- info = { runs = { {name=, dispatches=, detailed=, first=, last=,
-- slowest=} }, bounded = true when some run was cut to its limit }.
--
-- Sits after the record sets in the flow. This file holds the document:
-- which dispatches of a run are drawn, each run's threads, counter tracks
-- and metadata, and the stream; the text of the events (the tracks a
-- dispatch is drawn on, a record's args) is output/trace_events.lua, and
-- the JSON texts below both come from output/json.lua. The set is read a
-- chunk of records at a time, column by column, and the document written
-- as it is made, so memory stays that of one chunk (plus the slowest
-- dispatches' row numbers when bounded).
--
-- What a dispatch gives (its tracks; one function each in M.TRACKS, so a
-- track can be added without touching the others):
--   host       a "dispatch" slice as long as its wall (or its named phases,
--              when they exceed it), its phases as child slices laid end to
--              end in schema order, the residue as "unattributed", nested
--              regions inside their phase;
--   device     with CUPTI's timeline (kernel_src=cupti): the launch loop's
--              kernels as one slice from the first kernel's start to the
--              last one's end, and the first launch call as an instant, at
--              their true times (the probe clock, like the host slices);
--              with event pairs: the outer device window and the
--              kernel-only window on two tracks of their own, placed where
--              the events are recorded (their device times have no host
--              time of their own).
-- Per run, counter tracks: each phase's mean ns per dispatch and the
-- largest wall, over bins of consecutive dispatches (about M.BINS bins).
-- Integer args past 2^63-1 are written as strings (trace readers parse
-- integers as int64); every arg is the record's own value, exact, while a
-- duration or a time past 2^63-1 ns is drawn saturated at 2^63-1 ns (the
-- metadata says so).
local record = require "phaseprobe.record"
local records_mod = require "phaseprobe.records"
local files = require "phaseprobe.output.files"
local json = require "phaseprobe.output.json"
local report = require "phaseprobe.output.report"
local events = require "phaseprobe.output.trace_events"

local M = {}

--- Dispatches drawn in full per run by default; counter bins per run.
M.LIMIT = 5000
M.BINS = 2000
--- Records read per chunk.
M.CHUNK = 2048
--- The tracks a dispatch is drawn on, one function(run) -> function(d, emit)
-- each: output/trace_events.lua's table itself (what they are given is
-- said there), so an entry set here is drawn.
M.TRACKS = events.TRACKS

local encode = json.encode
local us_text = json.us_text
local key_cache, str_cache = events.key_text, events.str_text
local u, sat_add = events.u, record.sat_add
local value_json, arg_text = events.value_json, events.arg_text
local meta, fast_args = events.meta, events.fast_args

local PHASE_LAYOUT = "Phases are a partition of charged host time, not a record of when each ran: "
  .. "within a dispatch they are laid end to end from its start in schema order, then an "
  .. "'unattributed' slice holds the residue (wall_ns - named_host_ns). Nested regions (sub_*) "
  .. "are laid end to end inside the phase they were measured in. Zero-length phases are left out."
local DEVICE_LAYOUT = "Records timed by CUPTI's timeline (kernel_src=cupti) draw their kernels at "
  .. "their true times, on the probe clock like the host slices: a 'kernels' slice from the first "
  .. "kernel's start to the last one's end and a 'launch call' instant at the first launch. Event-pair "
  .. "records: device slices have their measured durations (device_window_ns, kernel_ns); their "
  .. "positions are modelled: the outer window starts where its start event is recorded (the end of "
  .. "the stage phase), the kernel window at the start of the launch phase, both kept inside the "
  .. "dispatch where they fit."
local COUNTERS = "Counter tracks, per run: each phase's mean ns per dispatch and the largest "
  .. "wall_ns, over bins of consecutive dispatches, at the start of each bin's first dispatch. "
  .. "They cover every dispatch, those drawn in full or not."
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

-- ---- the set, a chunk at a time ---------------------------------------------

local function as_set(set, what)
  return json.check_set(set, what)
end

-- Calls fn(vals, m, i0) for each chunk of the set's records (i0: the
-- index of its first record; vals[f][j]: field f of its j-th record, nil
-- when absent).
local function each_chunk(set, fields, fn)
  local cols = set:columns()
  local n = set:count()
  local chunk = M.CHUNK
  for i0 = 1, n, chunk do
    local m = math.min(chunk, n - i0 + 1)
    local rows = {}
    for j = 1, m do rows[j] = set:row(i0 + j - 1) end
    local sel = cols:select(rows)
    local vals = {}
    for _, f in ipairs(fields) do
      local v = cols:values(f, sel)
      if #v ~= m then -- some records lack it: one at a time, holes kept
        v = {}
        for j = 1, m do v[j] = cols:get(rows[j], f) end
      end
      vals[f] = v
    end
    fn(vals, m, i0)
  end
end

-- ---- planning a run -----------------------------------------------------------

-- Indices of the `k` records with the largest wall (ties: the earlier).
local function slowest(set, k)
  if k <= 0 then return {}, 0 end
  local heap, hn = {}, 0 -- min-heap of { wall, index }
  local function less(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] > b[2]) end
  local function push(e)
    hn = hn + 1
    heap[hn] = e
    local i = hn
    while i > 1 do
      local p = i // 2
      if less(heap[i], heap[p]) then heap[i], heap[p] = heap[p], heap[i]; i = p else break end
    end
  end
  local function replace_top(e)
    heap[1] = e
    local i = 1
    while true do
      local l, r, s = 2 * i, 2 * i + 1, i
      if l <= hn and less(heap[l], heap[s]) then s = l end
      if r <= hn and less(heap[r], heap[s]) then s = r end
      if s == i then break end
      heap[i], heap[s] = heap[s], heap[i]
      i = s
    end
  end
  each_chunk(set, { "wall_ns" }, function(vals, m, i0)
    local w = vals.wall_ns
    for j = 1, m do
      local wall = u(w[j])
      if hn < k then
        push({ wall, i0 + j - 1 })
      elseif wall > heap[1][1] then
        replace_top({ wall, i0 + j - 1 })
      end
    end
  end)
  local out = {}
  for i = 1, hn do out[heap[i][2]] = true end
  return out, hn
end

-- How a run is laid out: absolute start times or end to end; which
-- dispatches are drawn in full.
local function plan_run(set, opts)
  local n = set:count()
  local plan = { n = n, absolute = false, base = 0 }
  if n > 0 and set:has("start_ns") then
    local s = set:summary("start_ns")
    if s.count == n and s.min and s.min > 0 then
      if s.max - s.min > MAX_SPAN then
        plan.too_wide = true
      else
        plan.absolute = true
        plan.base = math.tointeger(s.min) or math.floor(s.min)
      end
    end
  end
  local limit = opts.all and n or math.max(0, math.floor(opts.limit or M.LIMIT))
  if n <= limit then
    plan.all = true
    plan.detailed = n
  else
    plan.first = math.min(limit // 10, n)
    plan.last = math.min(limit // 10, n - plan.first)
    local rest = limit - plan.first - plan.last
    -- the slowest among those between the first and the last
    local inner = set
    if plan.first > 0 or plan.last > 0 then
      local rows = {}
      for i = plan.first + 1, n - plan.last do rows[#rows + 1] = set:row(i) end
      inner = records_mod.wrap(set:columns(), set:columns():select(rows))
    end
    local picked, count = slowest(inner, rest)
    plan.slow = {}
    for i in pairs(picked) do plan.slow[i + plan.first] = true end
    plan.slowest = count
    plan.detailed = plan.first + plan.last + count
  end
  plan.bin = math.max(1, math.ceil(n / M.BINS))
  return plan
end

-- ---- one run --------------------------------------------------------------------

-- Writes the events of one run through emit; returns its metadata.
local function run_events(run, pid, tids, emit, opts, progress)
  local set = run.set
  local plan = plan_run(set, opts)
  emit(meta(pid, nil, "process_name", { name = run.name }))
  emit(meta(pid, nil, "process_sort_index", { sort_index = pid }))
  emit(meta(pid, nil, "process_labels",
    { labels = plan.absolute and "absolute start times" or "dispatches laid end to end" }))

  local fields = set:fields()
  local L = set:layout()
  local phase_info = {}
  for i, p in ipairs(L.phases) do phase_info[i] = { label = p, short = record.short(p) } end
  local need, keys, ckeys, intcol = {}, {}, {}, {}
  local store = set:columns()
  for i, f in ipairs(fields) do
    need[i], keys[i], ckeys[i] = f, key_cache[f], "," .. key_cache[f]
    intcol[i] = store:kind(f) == "integer"
  end
  local kinds = {}
  for i, f in ipairs(fields) do kinds[i] = store:kind(f) end
  local fast = fast_args(fields, kinds)
  local nfields = #fields

  local tracks, ntracks, shifted = {}, 0, 0
  local function track(real)
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
    emit(meta(pid, tid, "thread_name", { name = label }))
    emit(meta(pid, dev, "thread_name", { name = "device window (" .. label .. ")" }))
    emit(meta(pid, ker, "thread_name", { name = "kernel only (" .. label .. ")" }))
    emit(meta(pid, tid, "thread_sort_index", { sort_index = 3 * ntracks }))
    emit(meta(pid, dev, "thread_sort_index", { sort_index = 3 * ntracks + 1 }))
    emit(meta(pid, ker, "thread_sort_index", { sort_index = 3 * ntracks + 2 }))
    return t
  end

  -- counter bins
  local labels = {}
  for _, p in ipairs(phase_info) do labels[#labels + 1] = p end
  labels[#labels + 1] = { label = "unattributed", short = "unattributed" }
  local bin = { n = 0, sums = {}, max_wall = 0, ts = nil }
  local function flush_bin()
    if bin.n == 0 then return end
    for k, p in ipairs(labels) do
      local mean = bin.sums[k] / bin.n -- (saturated as the slices are)
      emit(table.concat { ',\n{"args":{"ns":', mean >= 0x1p63 and tostring(math.maxinteger)
        or string.format("%.0f", mean),
        '},"name":', str_cache[p.short .. " (mean ns per dispatch)"], ',"ph":"C","pid":', pid,
        ',"tid":0,"ts":', us_text(bin.ts), "}" })
    end
    emit(table.concat { ',\n{"args":{"ns":', bin.max_wall, '},"name":"wall (largest ns in the bin)",',
      '"ph":"C","pid":', pid, ',"tid":0,"ts":', us_text(bin.ts), "}" })
    bin.n, bin.max_wall, bin.ts = 0, 0, nil
    for k = 1, #labels do bin.sums[k] = 0.0 end
  end
  -- (sums as floats: durations saturated at 2^63-1 would wrap as integers)
  for k = 1, #labels do bin.sums[k] = 0.0 end

  -- one dispatch at a time: its phases and its view are reused
  local phases = {}
  for k, p in ipairs(phase_info) do phases[k] = { label = p.label, short = p.short, at = 0, dur = 0 } end
  local d = { pid = pid, phases = phases }
  local drawers = {}
  for k, make in ipairs(M.TRACKS) do drawers[k] = make({ pid = pid, layout = L }) end
  function d.get(f)
    local c = d.vals[f]
    return c and c[d.j]
  end
  function d.record() return set:record(d.i) end
  local nphases = #phases
  local done = 0
  each_chunk(set, need, function(vals, m, i0)
    local walls, starts, tidv = vals.wall_ns, vals.start_ns, vals.tid
    local pcols, fcols = {}, {}
    for k = 1, nphases do pcols[k] = vals[phases[k].label] end
    for fi = 1, nfields do fcols[fi] = vals[fields[fi]] end
    for j = 1, m do
      local i = i0 + j - 1
      local named, inexact = 0, false
      for k = 1, nphases do
        local ph = phases[k]
        local dv = pcols[k][j]
        ph.text = nil
        if math.type(dv) ~= "integer" or dv < 0 then
          if dv ~= nil then
            ph.text = arg_text(dv, ph.label, function() return set:record(i) end)
            inexact = true
          end
          dv = u(dv)
        end
        ph.at, ph.dur = named, dv
        named = sat_add(named, dv)
      end
      local wall = walls and walls[j] ~= nil and u(walls[j]) or named
      local dur = math.max(wall, named)
      local t = track(tidv and u(tidv[j]) or 0)
      local start, shift
      if plan.absolute then
        local own = u(starts[j]) - plan.base
        start = own
        if start < t.host_end then
          shifted = shifted + 1
          start = t.host_end
          shift = start - own
        end
      else
        start = t.host_end
      end
      t.host_end = sat_add(start, dur)

      -- counters
      if bin.n == 0 then bin.ts = start end
      bin.n = bin.n + 1
      for k = 1, #phase_info do bin.sums[k] = bin.sums[k] + phases[k].dur end
      bin.sums[#labels] = bin.sums[#labels] + (dur - named)
      if wall > bin.max_wall then bin.max_wall = wall end
      if bin.n >= plan.bin then flush_bin() end

      if plan.all or i <= plan.first or i > plan.n - plan.last or plan.slow[i] then
        -- the record's fields as args, in line order
        local text = fast and fast(fcols, j)
        local parts, np = { "{" }, 1
        for fi = 1, text and 0 or nfields do
          local v = fcols[fi][j]
          if v ~= nil then
            parts[np + 1] = np == 1 and keys[fi] or ckeys[fi]
            if intcol[fi] and math.type(v) == "integer" then
              parts[np + 2] = tostring(v)
            else
              parts[np + 2] = value_json(v, fields[fi], function() return set:record(i) end)
            end
            np = np + 2
          end
        end
        if shift then
          np = np + 1; parts[np] = (np > 2 and "," or "") .. '"shifted_ns":' .. shift
        end
        if named > wall then
          np = np + 1
          parts[np] = (np > 2 and "," or "")
            .. '"note":"named phases exceed wall_ns: the slice is as long as their sum"'
        end
        parts[np + 1] = "}"
        if text then
          -- the fast text, with what the general path adds after the fields
          text = np > 1 and (text:sub(1, -2) .. "," .. table.concat(parts, "", 2)) or text
        else
          text = table.concat(parts)
        end
        d.track, d.start, d.dur, d.named, d.args = t, start, dur, named, text
        d.vals, d.j, d.inexact, d.i = vals, j, inexact, i
        for k = 1, #drawers do drawers[k](d, emit) end
      end
    end
    done = done + m
    if progress then progress(m) end
  end)
  flush_bin()
  local info = { name = run.name, dispatches = plan.n, detailed = plan.detailed,
    first = plan.first, last = plan.last, slowest = plan.slowest }
  return {
    pid = pid,
    name = run.name,
    records = plan.n,
    drawn_in_full = plan.detailed,
    selection = plan.all and "every dispatch" or string.format("the first %s, the last %s and the "
      .. "%s slowest of the others (by wall_ns); every dispatch is in the counter tracks",
      report.num(plan.first), report.num(plan.last), report.num(plan.slowest)),
    timestamps = plan.absolute and "absolute" or "end_to_end",
    time_base_ns = plan.absolute and plan.base or nil,
    note = plan.absolute and ABSOLUTE or plan.too_wide and TOO_WIDE or END_TO_END,
    shifted = shifted > 0 and shifted or nil,
  }, info
end

local function check_runs(runs)
  if type(runs) ~= "table" or #runs == 0 then
    error("export.trace_runs: expected a list of runs { {name=, set=}, ... }", 3)
  end
  for i, run in ipairs(runs) do
    if type(run) ~= "table" or type(run.name) ~= "string" or type(run.set) ~= "table" then
      error(("export.trace_runs: run %d must be { name = string, set = records }"):format(i), 3)
    end
  end
end

local function version()
  local ok, pp = pcall(require, "phaseprobe")
  return ok and type(pp) == "table" and pp.version or "unknown"
end

-- The document, written piecewise through `write`. Returns the info.
local function write_trace(runs, write, opts)
  opts = opts or {}
  local sets = {}
  for i, run in ipairs(runs) do sets[i] = { name = run.name, set = as_set(run.set, "export.trace") } end
  local total = 0
  for _, r in ipairs(sets) do total = total + r.set:count() end
  local done = 0
  local progress = opts.progress and function(m)
    done = done + m
    opts.progress(done, total)
  end
  -- events are gathered and written in batches of about 64 KiB
  -- (every event's text starts with ",\n"; the first one's is cut)
  local buf, nb = {}, 0
  local first = true
  local function flush()
    if nb == 0 then return end
    if first then
      buf[1] = buf[1]:sub(3)
      first = false
    end
    write(table.concat(buf, "", 1, nb))
    nb = 0
  end
  local function emit(text)
    nb = nb + 1
    buf[nb] = text
    if nb >= 256 then flush() end
  end
  write('{"traceEvents":[\n')
  local tids = { used = {}, next = DEVICE_TID_BASE }
  local metas = json.array()
  local info = { runs = {}, bounded = false }
  for pid, run in ipairs(sets) do
    local m, ri = run_events(run, pid, tids, emit, opts, progress)
    metas[#metas + 1] = m
    info.runs[#info.runs + 1] = ri
    if ri.detailed < ri.dispatches then info.bounded = true end
  end
  flush()
  local doc_meta = {
    phaseprobe = {
      format = "phaseprobe-trace/1",
      version = version(),
      units = "ts and dur are microseconds with three decimals: exact nanoseconds; args hold "
        .. "exact integers, and u64 values above 2^63-1 (saturated counters) as strings of their "
        .. "digits. A duration or a time past 2^63-1 ns saturates: the slice is drawn 2^63-1 ns "
        .. "long (9223372036854775.807 us) and later timestamps stop there; its args keep the "
        .. "record's exact value.",
      phase_layout = PHASE_LAYOUT,
      device_layout = DEVICE_LAYOUT,
      counters = COUNTERS,
      runs = metas,
    },
  }
  write('\n],\n"metadata":')
  write(encode(doc_meta, "trace metadata"))
  write("}\n")
  return info
end

function M.trace_runs(runs, path, stream, opts)
  check_runs(runs)
  local w, err = files.open_out(path, "export.trace", stream)
  if not w then return nil, err end
  local ok, info = pcall(write_trace, runs, w.write, opts)
  if not ok then
    w.close()
    error(info, 0)
  end
  local cok, cerr = w.close()
  if not cok then return nil, cerr end
  return true, info
end

-- opts.name: the process name (default "phaseprobe"); limit, all as for
-- trace_runs.
function M.trace(set, path, opts)
  opts = opts or {}
  json.check_set(set, "export.trace")
  return M.trace_runs({ { name = opts.name or "phaseprobe", set = set } }, path, nil, opts)
end

-- The trace document as a string (for callers that want it in memory).
function M.trace_text(runs, opts)
  check_runs(runs)
  local out = {}
  write_trace(runs, function(s) out[#out + 1] = s end, opts)
  return table.concat(out)
end

return M
