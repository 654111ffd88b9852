--- phaseprobe.record: what the fields of a record mean.
--
-- A record (the C type "phaseprobe.record", csrc/lua/lua_record.c) carries
-- names and values; this module is the one rule that says which names are
-- host phases, nested regions, counted quantities, caches and times, for
-- any schema and for records read back from logs, CSV or JSON lines. Record
-- sets (phaseprobe.records) apply it once per set (set:layout()); the
-- analysis, the reports and the exports take it from there.
--
--   local record = require "phaseprobe.record"
--   local L = record.layout(fields [, kind])
--     fields: names in line order; kind(name) -> "integer" | "number" |
--     "string" | nil (what the values are; quantities need it)
--   L.phases      {labels}   the host phases, a partition of charged time
--   L.nested      {labels}   nested regions (sub_<name>_ns), measured inside
--                            a phase and never added to the sum
--   L.parent      label -> the phase a nested region sits in (or nil)
--   L.counts      {names}    the schema's counted quantities
--   L.caches      {names}    caches with <c>_cache_hits and <c>_cache_misses
--   L.times       {names}    the other _ns fields (wall_ns, kernel_ns, ...)
--   L.quantities  {names}    what a phase may scale with
--   L.rule        how the phases were found: "reference" | "order" | "suffix"
--   L.index       name -> position in `fields`
--
-- The rule. Phases are
--   * the reference's nine (prepare_ns ptx_ns modkey_ns stage_ns resolve_ns
--     lease_ns launch_ns release_ns readback_ns) when all nine are present;
--   * otherwise, in line order, the fields after kernel_ns and before the
--     first sub_* field or named_host_ns that end in _ns and are not one of
--     the times below (every schema prints its phases there);
--   * if that finds none (no kernel_ns, another order), every _ns field that
--     is neither sub_* nor one of the times.
-- Times: wall_ns enqueue_ns wait_ns device_window_ns kernel_ns named_host_ns
-- unattributed_ns start_ns probe_ns kernel_floor_ns.
-- A nested region belongs to the phase whose short name is the longest
-- prefix of its own ("sub_ptx_digest_ns" -> ptx_ns).
-- Counts are the fields between seq and wall_ns (where the schema prints
-- them). Quantities are the numeric fields that are not _ns times, not seq
-- or tid, and not cache hit counters: the counts, user counters, numeric
-- tags and <cache>_cache_misses.
--
-- Values: u64 fields reach Lua as integers up to 2^63-1 and as floats above
-- (a saturated sum); record.u reads a time as an integer for arithmetic.
local M = {}

M.DEFAULT_PHASES = { "prepare_ns", "ptx_ns", "modkey_ns", "stage_ns", "resolve_ns",
  "lease_ns", "launch_ns", "release_ns", "readback_ns" }

M.TIMES = {}
for _, f in ipairs({ "wall_ns", "enqueue_ns", "wait_ns", "device_window_ns", "kernel_ns",
  "named_host_ns", "unattributed_ns", "start_ns", "probe_ns", "kernel_floor_ns" }) do
  M.TIMES[f] = true
end

--- Short name of a phase or nested label: "ptx_ns" -> "ptx", "sub_ptx_vsa_ns" -> "ptx_vsa".
function M.short(label)
  return (label:gsub("^sub_", ""):gsub("_ns$", ""))
end

local function is_phase_like(f)
  return f:match("_ns$") and not f:match("^sub_") and not M.TIMES[f]
end

local function phases_of(fields, index)
  local all9 = true
  for _, p in ipairs(M.DEFAULT_PHASES) do
    if not index[p] then
      all9 = false
      break
    end
  end
  local out = {}
  if all9 then
    for i, p in ipairs(M.DEFAULT_PHASES) do out[i] = p end
    return out, "reference"
  end
  local start = index.kernel_ns
  if start then
    for i = start + 1, #fields do
      local f = fields[i]
      if f:match("^sub_") or f == "named_host_ns" then break end
      if is_phase_like(f) then out[#out + 1] = f end
    end
  end
  if #out > 0 then return out, "order" end
  for _, f in ipairs(fields) do
    if is_phase_like(f) then out[#out + 1] = f end
  end
  return out, "suffix"
end

--- The meaning of each field of a record or set: see the header.
function M.layout(fields, kind)
  local index = {}
  for i, f in ipairs(fields) do
    if index[f] == nil then index[f] = i end
  end
  local L = { fields = fields, index = index, nested = {}, parent = {}, counts = {},
    caches = {}, times = {}, quantities = {} }
  L.phases, L.rule = phases_of(fields, index)
  local is_phase = {}
  for _, p in ipairs(L.phases) do is_phase[p] = true end
  for _, f in ipairs(fields) do
    if f:match("^sub_.+_ns$") then
      local short, parent, best = M.short(f), nil, -1
      for _, p in ipairs(L.phases) do
        local ps = M.short(p)
        if (short == ps or short:sub(1, #ps + 1) == ps .. "_") and #ps > best then
          parent, best = p, #ps
        end
      end
      L.nested[#L.nested + 1] = f
      L.parent[f] = parent
    elseif f:match("_ns$") and not is_phase[f] then
      L.times[#L.times + 1] = f
    end
    local c = f:match("^(.+)_cache_misses$")
    if c and index[c .. "_cache_hits"] then L.caches[#L.caches + 1] = c end
  end
  if index.seq and index.wall_ns and index.seq < index.wall_ns then
    for i = index.seq + 1, index.wall_ns - 1 do L.counts[#L.counts + 1] = fields[i] end
  end
  if kind then
    for _, f in ipairs(fields) do
      local k = kind(f)
      if (k == "integer" or k == "number") and not f:match("_ns$") and f ~= "seq"
        and f ~= "tid" and not f:match("_cache_hits$") and not f:match("_cache_disk_hits$") then
        L.quantities[#L.quantities + 1] = f
      end
    end
  end
  return L
end

--- The value of a time or count field as a non-negative integer, 0 when
-- absent or not a number; a value above 2^63-1 (a float) reads as
-- math.maxinteger, so sums stay ordered.
function M.u(r, name)
  local v = r[name]
  if math.type(v) == "integer" then
    return v < 0 and 0 or v
  elseif type(v) == "number" then
    if v ~= v or v <= 0 then return 0 end
    if v >= 0x1p63 then return math.maxinteger end
    return math.floor(v)
  end
  return 0
end

--- Saturating addition of non-negative integers.
function M.sat_add(a, b)
  local s = a + b
  if s < a then return math.maxinteger end
  return s
end

return M
