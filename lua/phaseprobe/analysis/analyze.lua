--- phaseprobe.analysis.analyze: what a record set's fields mean, and the per-phase
-- answers: where the time goes, what each phase scales with, how much of
-- the device window is host starvation, and what is left unattributed.
--
--   local analyze = require "phaseprobe.analysis.analyze"
--   local info = analyze.schema(set)      -- phases, nested, quantities, caches
--   local s = analyze.scaling(set)        -- verdict per phase and nested region
--   local st = analyze.starvation(set)    -- window - kernel, residue, probe cost
--
-- Which fields are phases (the rule, for any schema):
--   * the reference's nine (prepare_ns ptx_ns modkey_ns stage_ns resolve_ns
--     lease_ns launch_ns release_ns readback_ns) when all nine are present;
--   * otherwise, in line order, the fields after kernel_ns and before the
--     first sub_* field or named_host_ns that end in _ns, are not sub_*, and
--     are none of wall_ns enqueue_ns wait_ns device_window_ns kernel_ns
--     named_host_ns unattributed_ns start_ns probe_ns kernel_floor_ns;
--   * if that finds none (no kernel_ns, another order), every _ns field
--     that is neither sub_* nor one of those.
-- Nested regions are the sub_<name>_ns fields; each belongs to the phase
-- whose name is the longest prefix of <name> ("sub_ptx_digest_ns" -> ptx_ns).
-- Counted quantities are the numeric fields that are not _ns times, not
-- seq or tid, and not cache hit counters: nodes, ptx_bytes, buffers,
-- bindings, fixpoint, grid_blocks, user counters, numeric tags, and
-- <cache>_cache_misses.
local fit = require "phaseprobe.analysis.fit"

local M = {}

M.DEFAULT_PHASES = { "prepare_ns", "ptx_ns", "modkey_ns", "stage_ns", "resolve_ns",
  "lease_ns", "launch_ns", "release_ns", "readback_ns" }

M.NOT_PHASES = {}
for _, f in ipairs({ "wall_ns", "enqueue_ns", "wait_ns", "device_window_ns", "kernel_ns",
  "named_host_ns", "unattributed_ns", "start_ns", "probe_ns", "kernel_floor_ns" }) do
  M.NOT_PHASES[f] = true
end

local function index_of(list, x)
  for i, v in ipairs(list) do if v == x then return i end end
  return nil
end

local function is_phase_like(f)
  return f:match("_ns$") and not f:match("^sub_") and not M.NOT_PHASES[f]
end

--- Short name of a phase or nested label: "ptx_ns" -> "ptx", "sub_ptx_vsa_ns" -> "ptx_vsa".
function M.short(label)
  return (label:gsub("^sub_", ""):gsub("_ns$", ""))
end

local function derive_phases(fields)
  local all9 = true
  for _, p in ipairs(M.DEFAULT_PHASES) do
    if not index_of(fields, p) then all9 = false break end
  end
  if all9 then
    local out = {}
    for i, p in ipairs(M.DEFAULT_PHASES) do out[i] = p end
    return out, "reference"
  end
  local out = {}
  local start = index_of(fields, "kernel_ns")
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

--- What the set's fields are: {phases={labels}, nested={ {label=, parent=} },
-- quantities={names}, caches={names}, rule="reference"|"order"|"suffix"}.
-- opts.quantities replaces the derived quantities.
function M.schema(set, opts)
  local fields = set:fields()
  local info = { nested = {}, quantities = {}, caches = {} }
  info.phases, info.rule = derive_phases(fields)
  for _, f in ipairs(fields) do
    if f:match("^sub_.+_ns$") then
      local short, parent, best = M.short(f), nil, -1
      for _, p in ipairs(info.phases) do
        local ps = M.short(p)
        if (short == ps or short:sub(1, #ps + 1) == ps .. "_") and #ps > best then
          parent, best = p, #ps
        end
      end
      info.nested[#info.nested + 1] = { label = f, parent = parent }
    end
    local c = f:match("^(.+)_cache_misses$")
    if c and index_of(fields, c .. "_cache_hits") then info.caches[#info.caches + 1] = c end
  end
  if opts and opts.quantities then
    for i, q in ipairs(opts.quantities) do info.quantities[i] = q end
  else
    local cols = set:columns()
    for _, f in ipairs(fields) do
      local k = cols:kind(f)
      if (k == "integer" or k == "number") and not f:match("_ns$") and f ~= "seq"
        and f ~= "tid" and not f:match("_cache_hits$") and not f:match("_cache_disk_hits$") then
        info.quantities[#info.quantities + 1] = f
      end
    end
  end
  return info
end

--- Per-phase time: { {name=, summary=, share=}, ... } with share = the
-- phase's total over the total wall_ns (nil without wall_ns), then the
-- nested regions (kind = "nested", parent =), then the residue rows.
function M.phases(set, info)
  info = info or M.schema(set)
  local wall = set:has("wall_ns") and set:summary("wall_ns") or nil
  local function share(s)
    if not wall or not wall.sum or wall.sum == 0 or not s.sum then return nil end
    return s.sum / wall.sum
  end
  local out = {}
  for _, p in ipairs(info.phases) do
    local s = set:summary(p)
    out[#out + 1] = { name = p, kind = "phase", summary = s, share = share(s) }
  end
  for _, n in ipairs(info.nested) do
    local s = set:summary(n.label)
    out[#out + 1] = { name = n.label, kind = "nested", parent = n.parent, summary = s,
      share = share(s) }
  end
  for _, f in ipairs({ "named_host_ns", "unattributed_ns", "wall_ns" }) do
    if set:has(f) then
      local s = set:summary(f)
      out[#out + 1] = { name = f, kind = "total", summary = s, share = share(s) }
    end
  end
  return out
end

--- Scaling verdicts for every phase and nested region:
-- {quantities={...}, phases={verdicts}, nested={verdicts}} (see phaseprobe.analysis.fit).
function M.scaling(set, opts)
  local info = M.schema(set, opts)
  local out = { quantities = info.quantities, phases = {}, nested = {}, rule = info.rule }
  local ys = {}
  for _, p in ipairs(info.phases) do ys[#ys + 1] = p end
  for _, n in ipairs(info.nested) do ys[#ys + 1] = n.label end
  local all = (#ys > 0 and #info.quantities > 0) and set:fits(info.quantities, ys) or {}
  for _, p in ipairs(info.phases) do
    local v = fit.verdict(set, p, info.quantities, opts, all[p])
    v.kind = "phase"
    out.phases[#out.phases + 1] = v
  end
  for _, n in ipairs(info.nested) do
    local v = fit.verdict(set, n.label, info.quantities, opts, all[n.label])
    v.kind, v.parent = "nested", n.parent
    out.nested[#out.nested + 1] = v
  end
  return out
end

local function share_of(s, wall)
  if not s or not s.sum or not wall or not wall.sum or wall.sum == 0 then return nil end
  return s.sum / wall.sum
end

--- Host starvation priced from the two event pairs, the unattributed
-- residue, and the probe's own cost, each as ns and as a share of wall:
-- {n=, wall=summary,
--  starvation = {n=, summary=, share=}   device_window_ns - kernel_ns per
--      dispatch (saturating), over dispatches that measured both;
--  residue = {summary=, share=}          unattributed_ns;
--  probe = {summary=, share=}            probe_ns;
--  notes = {...}}                          what was not measured.
function M.starvation(set)
  local out = { n = set:count(), notes = {} }
  out.wall = set:has("wall_ns") and set:summary("wall_ns") or nil
  if set:has("device_window_ns") and set:has("kernel_ns") then
    local win = set:range("device_window_ns", 1)
    local both = win:range("kernel_ns", 1)
    local s = both:lincomb({ { "device_window_ns", 1 }, { "kernel_ns", -1 } }, 0)
    local bw = both:count() > 0 and both:summary("wall_ns") or nil
    out.starvation = { n = both:count(), summary = s, share = share_of(s, bw),
      window = both:count() > 0 and both:summary("device_window_ns") or nil,
      kernel = both:count() > 0 and both:summary("kernel_ns") or nil }
    if win:count() < out.n then
      out.notes[#out.notes + 1] = string.format(
        "device_window_ns not measured (0) in %d of %d records", out.n - win:count(), out.n)
    end
    if both:count() < win:count() then
      out.notes[#out.notes + 1] = string.format(
        "kernel_ns not measured (0) in %d of %d records with a device window",
        win:count() - both:count(), win:count())
    end
  else
    out.notes[#out.notes + 1] = "no device_window_ns/kernel_ns fields: starvation not priced"
  end
  if set:has("unattributed_ns") then
    local s = set:summary("unattributed_ns")
    out.residue = { summary = s, share = share_of(s, out.wall) }
  elseif set:has("wall_ns") and set:has("named_host_ns") then
    local s = set:lincomb({ { "wall_ns", 1 }, { "named_host_ns", -1 } }, 0)
    out.residue = { summary = s, share = share_of(s, out.wall) }
  end
  if set:has("probe_ns") then
    local s = set:summary("probe_ns")
    out.probe = { summary = s, share = share_of(s, out.wall) }
  end
  return out
end

--- fn(set) for each group of `field`: { {key=, missing=, n=, set=, result=}, ... }.
function M.by_group(set, field, fn)
  local out = {}
  for i, g in ipairs(set:group(field)) do
    out[i] = { key = g.key, missing = g.missing, n = g.n, set = g.set, result = fn(g.set) }
  end
  return out
end

return M
