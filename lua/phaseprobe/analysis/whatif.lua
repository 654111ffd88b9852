--- phaseprobe.analysis.whatif: projected wall and enqueue time per dispatch and per
-- encode under scenarios, beside what was measured; and, when the variant
-- was also run, the projection's error.
--
--   local whatif = require "phaseprobe.analysis.whatif"
--   local r = whatif.project(set, { remove = { "ptx_digest" } })
--   local r = whatif.project(set, { scale = { ptx = 0.5 }, hits = { "ptx" }, dispatches = 4 })
--   local base, variant = whatif.split(set, "knob", "memo_digest")
--   local r = whatif.check(base, variant, { remove = { "ptx_digest" } })
--   -- r.measured.wall, r.projected.wall, r.variant.wall, r.error.wall
--
-- The model (per dispatch, then averaged; sums below 0 count as 0):
--   remove P        wall - P
--   scale P by s    wall - (1 - s) * P
--   hits C          wall - misses_C * (miss cost - hit cost), where the miss
--                   cost is the median of C's phase (C_ns) over dispatches
--                   with misses and the hit cost its median over dispatches
--                   with hits and no misses; priced per miss
--   dispatches N    per encode = N * projected per-dispatch cost
-- P is a phase or a nested region (a nested region sits inside its phase,
-- so removing it shortens the phase and the wall). A scenario may not touch
-- a phase and one of its nested regions at once.
-- Enqueue: a saving lands in enqueue_ns when its phase is on the enqueue
-- side, which is every phase except release_ns and readback_ns (the wait
-- side) unless opts.wait_phases names others.
-- Per encode needs dispatches per encode: from an `encode` field (distinct
-- values) or opts.dispatches_per_encode.
--
-- Where it sits: takes record sets (phaseprobe.records) and their C
-- summaries; `phaseprobe whatif` prints the projection.
local analyze = require "phaseprobe.analysis.analyze"
local record = require "phaseprobe.record"

local M = {}

M.WAIT_PHASES = { "release_ns", "readback_ns" }

--- Resolves a phase or nested-region name ("ptx", "ptx_ns", "ptx_digest",
-- "sub_ptx_digest_ns") against the set: label, kind, parent.
function M.resolve(info, name)
  for _, p in ipairs(info.phases) do
    if name == p or name .. "_ns" == p then return p, "phase", p end
  end
  for _, n in ipairs(info.nested) do
    if name == n.label or "sub_" .. name .. "_ns" == n.label or "sub_" .. name == n.label then
      return n.label, "nested", n.parent
    end
  end
  local names = {}
  for _, p in ipairs(info.phases) do names[#names + 1] = record.short(p) end
  for _, n in ipairs(info.nested) do names[#names + 1] = record.short(n.label) end
  error(string.format("phaseprobe.analysis.whatif: no phase or nested region '%s' (valid: %s)",
    tostring(name), table.concat(names, ", ")), 0)
end

local function dispatches_per_encode(set, opts)
  if opts.dispatches_per_encode then return opts.dispatches_per_encode, "given" end
  local f = opts.encode or "encode"
  if not set:has(f) then return nil end
  local n = 0
  for _, g in ipairs(set:group(f)) do if not g.missing then n = n + 1 end end
  if n == 0 then return nil end
  return set:count() / n, f
end

--- The caches of the set whose misses a scenario can turn into hits: those
-- with a phase C_ns and fields C_cache_misses and C_cache_hits.
function M.caches(set)
  local out = {}
  for _, c in ipairs(set:layout().caches) do
    if set:has(c .. "_ns") and set:has(c .. "_cache_misses") and set:has(c .. "_cache_hits") then
      out[#out + 1] = c
    end
  end
  return out
end

-- Miss and hit cost of cache c's phase; saving per miss.
local function cache_price(set, c)
  local phase, misses, hits = c .. "_ns", c .. "_cache_misses", c .. "_cache_hits"
  for _, f in ipairs({ phase, misses, hits }) do
    if not set:has(f) then
      local caches = M.caches(set)
      error(string.format("phaseprobe.analysis.whatif: hits %s: no cache '%s' (valid: %s)", c, c,
        #caches > 0 and table.concat(caches, ", ") or "none in these records"), 0)
    end
  end
  local miss = set:range(misses, 1)
  local hit = set:where(misses, 0):range(hits, 1)
  local p = { cache = c, phase = phase, misses_field = misses, n_miss = miss:count(),
    n_hit = hit:count() }
  if p.n_miss == 0 then
    p.saving, p.note = 0, "no " .. c .. " cache misses measured: nothing to turn into hits"
    return p
  end
  if p.n_hit == 0 then
    error(string.format("phaseprobe.analysis.whatif: hits %s: no dispatch hit the %s cache without "
      .. "a miss, so a hit cannot be priced", c, c), 0)
  end
  p.miss_cost = miss:summary(phase).median
  p.hit_cost = hit:summary(phase).median
  p.saving = math.max(0, p.miss_cost - p.hit_cost)
  return p
end

local function add_scaled(steps, list, info)
  for name, factor in pairs(list) do
    if type(name) == "number" then name, factor = factor[1], factor[2] end
    if type(factor) ~= "number" or factor < 0 then
      error(string.format("phaseprobe.analysis.whatif: scale %s: the factor must be a number >= 0, got %s",
        tostring(name), tostring(factor)), 0)
    end
    local label, kind, parent = M.resolve(info, name)
    steps[#steps + 1] = { what = string.format("scale %s by %g", record.short(label), factor),
      field = label, kind = kind, parent = parent, coef = 1 - factor }
  end
end

--- Projects the set under a scenario: {remove={names}, scale={name=factor},
-- hits={caches}, dispatches=N}. opts: {wait_phases=, encode=,
-- dispatches_per_encode=}. Returns
-- {n=, steps={ {what=, field=, saved_wall=, saved_enqueue=} },
--  measured={wall=, enqueue=}, projected={wall=, enqueue=},
--  distribution=summary of projected wall, per_encode={...} | nil, notes={}}.
function M.project(set, scenario, opts)
  opts = opts or {}
  scenario = scenario or {}
  if not set:has("wall_ns") then error("phaseprobe.analysis.whatif: no wall_ns field", 0) end
  set = set:range("wall_ns") -- records without a wall time take no part
  if set:count() == 0 then error("phaseprobe.analysis.whatif: no records to project", 0) end
  local info = analyze.schema(set)
  local steps, notes = {}, {}
  for _, name in ipairs(scenario.remove or {}) do
    local label, kind, parent = M.resolve(info, name)
    steps[#steps + 1] = { what = "remove " .. record.short(label), field = label, kind = kind,
      parent = parent, coef = 1 }
  end
  add_scaled(steps, scenario.scale or {}, info)
  table.sort(steps, function(x, y) return x.what < y.what end)
  local touched = {}
  for _, s in ipairs(steps) do
    if touched[s.field] then
      error("phaseprobe.analysis.whatif: the scenario touches " .. s.field .. " twice", 0)
    end
    touched[s.field] = s
  end
  for _, s in ipairs(steps) do
    if s.kind == "nested" and s.parent and touched[s.parent] then
      error(string.format("phaseprobe.analysis.whatif: the scenario touches both %s and its nested "
        .. "region %s; they overlap", s.parent, s.field), 0)
    end
  end
  for _, c in ipairs(scenario.hits or {}) do
    local p = cache_price(set, c)
    if p.note then notes[#notes + 1] = p.note end
    if touched[p.phase] then
      error(string.format("phaseprobe.analysis.whatif: the scenario touches %s and also turns %s "
        .. "misses into hits; they overlap", p.phase, c), 0)
    end
    steps[#steps + 1] = { what = "hits " .. c, field = p.misses_field, kind = "cache",
      parent = p.phase, coef = p.saving, price = p }
  end
  local wait = {}
  for _, w in ipairs(opts.wait_phases or M.WAIT_PHASES) do wait[w] = true end
  local has_enq = set:has("enqueue_ns") and (set:summary("enqueue_ns").max or 0) > 0
  if not has_enq then notes[#notes + 1] = "enqueue_ns not recorded: no enqueue projection" end
  local wterms, eterms = { { "wall_ns", 1 } }, { { "enqueue_ns", 1 } }
  for _, s in ipairs(steps) do
    local phase = s.kind == "phase" and s.field or s.parent
    s.enqueue_side = phase ~= nil and not wait[phase]
    s.saved_wall = s.coef * set:per_record(s.field)
    wterms[#wterms + 1] = { s.field, -s.coef }
    if not has_enq then
      s.saved_enqueue = nil
    elseif s.enqueue_side then
      s.saved_enqueue = s.saved_wall
      eterms[#eterms + 1] = { s.field, -s.coef }
    else
      s.saved_enqueue = 0
    end
  end
  local r = { n = set:count(), steps = steps, notes = notes, scenario = scenario }
  r.measured = { wall = set:summary("wall_ns").mean }
  local dist = set:lincomb(wterms, 0)
  r.distribution = dist
  r.projected = { wall = dist.mean }
  if has_enq then
    r.measured.enqueue = set:summary("enqueue_ns").mean
    r.projected.enqueue = set:lincomb(eterms, 0).mean
  end
  local d, source = dispatches_per_encode(set, opts)
  if d or scenario.dispatches then
    if not d then
      notes[#notes + 1] = "dispatches per encode unknown (no encode field): per encode "
        .. "projected only"
    end
    local nd = scenario.dispatches or d
    r.per_encode = { dispatches = d, source = source, projected_dispatches = nd,
      projected = { wall = nd * r.projected.wall,
        enqueue = r.projected.enqueue and nd * r.projected.enqueue } }
    if d then
      r.per_encode.measured = { wall = d * r.measured.wall,
        enqueue = r.measured.enqueue and d * r.measured.enqueue }
    end
  end
  return require("phaseprobe.output.report").printable(r, function(t)
    return "phaseprobe.whatif\n" .. require("phaseprobe.output.report").whatif(t)
  end, "phaseprobe.whatif")
end

--- Splits a set by a knob field into (base, variant): the variant is the
-- records with field = value; the base those lacking the field or with
-- field = base_value (default: "none" or "base", the two names a run
-- without the knob goes by). A value given as text matches as the command
-- line's F=V does (records.condition): exactly, a number by its digits
-- (a u64 past 2^63-1 included), so "5" finds the records with 5.
function M.split(set, field, value, base_value)
  local records = require "phaseprobe.records"
  local variant = records.equal(set, field, value)
  local parts = { set:where { [field] = false } }
  for _, b in ipairs(base_value ~= nil and { base_value } or { "none", "base" }) do
    parts[#parts + 1] = records.equal(set, field, b)
  end
  return records.union(parts), variant
end

--- Projects base under the scenario and sets the measured variant beside
-- it: r.variant = {n=, wall=, enqueue=}, r.error = {wall=, enqueue=}
-- ((projected - measured) / measured).
function M.check(base, variant, scenario, opts)
  local r = M.project(base, scenario, opts)
  if variant:has("wall_ns") then variant = variant:range("wall_ns") end
  if variant:count() == 0 then error("phaseprobe.analysis.whatif: the variant has no records", 0) end
  r.variant = { n = variant:count(), wall = variant:summary("wall_ns").mean }
  if r.projected.enqueue and variant:has("enqueue_ns") then
    r.variant.enqueue = variant:summary("enqueue_ns").mean
  end
  r.error = {}
  for _, k in ipairs({ "wall", "enqueue" }) do
    local p, m = r.projected[k], r.variant[k]
    if p and m and m ~= 0 then r.error[k] = (p - m) / m end
  end
  return require("phaseprobe.output.report").printable(r, function(t)
    return "phaseprobe.whatif\n" .. require("phaseprobe.output.report").whatif(t)
  end, "phaseprobe.whatif")
end

return M
