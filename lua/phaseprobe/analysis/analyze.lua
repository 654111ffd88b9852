--- phaseprobe.analysis.analyze: what a record set's fields mean, and the per-phase
-- answers: where the time goes, what each phase scales with, how much of
-- the device window is host starvation, and what is left unattributed.
--
--   local analyze = require "phaseprobe.analysis.analyze"
--   local info = analyze.schema(set)      -- phases, nested, quantities, caches
--   local s = analyze.scaling(set)        -- verdict per phase and nested region
--   local st = analyze.starvation(set)    -- window - kernel, residue, probe cost
--
-- Which fields are phases, nested regions and quantities: the one rule of
-- phaseprobe.record (set:layout()).
--
-- Where it sits: record sets (phaseprobe.records) come in; the reports
-- (output/report.lua, output/html.lua, the commands) print what comes out.
local fit = require "phaseprobe.analysis.fit"

local M = {}

--- What the set's fields are: {phases={labels}, nested={ {label=, parent=} },
-- quantities={names}, caches={names}, rule="reference"|"order"|"suffix"}.
-- opts.quantities replaces the derived quantities.
function M.schema(set, opts)
  local L = set:layout()
  local info = { phases = {}, nested = {}, quantities = {}, caches = {}, rule = L.rule }
  for i, p in ipairs(L.phases) do info.phases[i] = p end
  for i, n in ipairs(L.nested) do info.nested[i] = { label = n, parent = L.parent[n] } end
  for i, c in ipairs(L.caches) do info.caches[i] = c end
  for i, q in ipairs(opts and opts.quantities or L.quantities) do info.quantities[i] = q end
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
