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
-- (output/analyses.lua through output/report.lua, output/html.lua, the
-- commands) print what comes out.
--
-- Progress: each step that goes through many fields or records (phases,
-- scaling, starvation, overrun, variants; compare.sets and the HTML page
-- too) says how far it is when opts.progress is given: a function(what,
-- {total=, unit=}) returning an object with update(done, extra, label) and
-- done(), as a command's ctx.progress does (phaseprobe.cli.progress). The
-- results are the same with it or without.
local fit = require "phaseprobe.analysis.fit"
-- the text a result prints as in the REPL (loaded when first needed)
local function report() return require "phaseprobe.output.report" end

local M = {}

-- ---- progress of a step -----------------------------------------------------

local Step = {}
Step.__index = Step

--- Items (k of them, default 1) begin: those before them are done. label
-- names what is under way.
function Step:begin(label, k)
  if self.p then self.p:update(self.n, nil, label) end
  self.n = self.n + (k or 1)
end

--- Whether a person is shown the progress (work may then be cut in
-- pieces so that it moves).
function Step:active()
  local p = self.p
  if not p then return false end
  if type(p.active) == "function" then return p:active() == true end
  return true
end

--- The step is over.
function Step:finish()
  if self.p then
    self.p:update(self.total, nil, nil)
    self.p:done()
  end
end

--- The progress of a step of `total` items of `unit` ("fields"), through
-- opts.progress (see the header); without it, a step that says nothing.
function M.step(opts, what, total, unit)
  local f = opts and opts.progress
  local p = type(f) == "function" and f(what, { total = total, unit = unit }) or nil
  return setmetatable({ p = p, n = 0, total = total }, Step)
end

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
-- opts.progress: see the header.
function M.phases(set, info, opts)
  info = info or M.schema(set)
  local totals = {}
  for _, f in ipairs({ "named_host_ns", "unattributed_ns", "wall_ns" }) do
    if set:has(f) then totals[#totals + 1] = f end
  end
  local step = M.step(opts, "summarising the phases", #info.phases + #info.nested + #totals,
    "fields")
  local wall
  if set:has("wall_ns") then
    step:begin("wall_ns")
    wall = set:summary("wall_ns")
  end
  local function share(s)
    if not wall or not wall.sum or wall.sum == 0 or not s.sum then return nil end
    return s.sum / wall.sum
  end
  local out = {}
  for _, p in ipairs(info.phases) do
    step:begin(p)
    local s = set:summary(p)
    out[#out + 1] = { name = p, kind = "phase", summary = s, share = share(s) }
  end
  for _, n in ipairs(info.nested) do
    step:begin(n.label)
    local s = set:summary(n.label)
    out[#out + 1] = { name = n.label, kind = "nested", parent = n.parent, summary = s,
      share = share(s) }
  end
  for _, f in ipairs(totals) do
    local s = wall
    if f ~= "wall_ns" then
      step:begin(f)
      s = set:summary(f)
    end
    out[#out + 1] = { name = f, kind = "total", summary = s, share = share(s) }
  end
  step:finish()
  return report().printable(out, function(t) return "phaseprobe.phases\n" .. report().phases(t) end,
    "phaseprobe.phases")
end

-- Quantities that move together: for the verdict v (a phase scaling with
-- v.quantity), those of v.also tied to it (R^2 of one on the other at least
-- collinear_r2); the verdict then names them all, since these records
-- cannot tell them apart.
local function collinear(set, v, opts, cache, quantities)
  local q = v.quantity
  local r2min = (opts and opts.collinear_r2) or fit.defaults.collinear_r2
  local tied = {}
  for _, o in ipairs(v.also) do
    local key = q .. "\0" .. o
    local r2 = cache[key]
    if r2 == nil then
      local f = set:fit(q, o)
      r2 = f.ok and f.ls and f.ls.r2 or 0
      if r2 ~= r2 then r2 = 0 end
      cache[key] = r2
    end
    if r2 >= r2min then tied[#tied + 1] = o end
  end
  if #tied == 0 then return end
  -- named in schema order, the first one carrying the numbers
  local order = {}
  for i, x in ipairs(quantities) do order[x] = i end
  local group = { q, table.unpack(tied) }
  table.sort(group, function(a, b) return (order[a] or 0) < (order[b] or 0) end)
  if group[1] ~= q then
    q = group[1]
    local f = v.fits[q]
    v.quantity, v.fixed_ns, v.ns_per_unit = q, f.ts.intercept, f.ts.slope
    v.quality, v.r2, v.ls_slope, v.effect = f.ts.quality, f.ls.r2, f.ls.slope, f.effect
  end
  tied = { table.unpack(group, 2) }
  v.collinear = tied
  v.verdict = "scales with " .. q .. " or " .. table.concat(tied, " or ")
  local also = {}
  local is_tied = {}
  for _, o in ipairs(tied) do is_tied[o] = true end
  for _, o in ipairs(v.also) do if not is_tied[o] then also[#also + 1] = o end end
  v.also = also
  v.reason = string.format("%s and %s move together in these records (collinear): they cannot "
    .. "be told apart; %s", q, table.concat(tied, " and "), v.reason)
end

--- Scaling verdicts for every phase and nested region:
-- {quantities={...}, phases={verdicts}, nested={verdicts}, untested =
-- { {name=, why=} }} (see phaseprobe.analysis.fit). A quantity decides
-- verdicts only with enough support (fit.support); the others are listed
-- in `untested`. A verdict whose quantity moves together with another
-- names both (v.collinear). opts.progress: see the header.
function M.scaling(set, opts)
  local info = M.schema(set, opts)
  local out = report().printable({ quantities = info.quantities, phases = {}, nested = {},
    rule = info.rule, untested = {} }, function(t) return "phaseprobe.scaling\n" .. report().scaling(t) end,
    "phaseprobe.scaling")
  local ys, parent = {}, {}
  for _, p in ipairs(info.phases) do ys[#ys + 1] = p end
  for _, n in ipairs(info.nested) do
    ys[#ys + 1] = n.label
    parent[n.label] = n.parent or false
  end
  local step = M.step(opts, "fitting the phases", #ys, "fields")
  local fopts = {}
  for k, v in pairs(opts or {}) do fopts[k] = v end
  fopts.support, fopts.progress = {}, nil
  for _, q in ipairs(info.quantities) do
    step:begin("the support of " .. q, 0)
    local sup = fit.support(set, q, opts)
    fopts.support[q] = sup
    if not sup.ok then out.untested[#out.untested + 1] = { name = q, why = sup.why } end
  end
  local cache = {}
  for _, batch in ipairs(M.fit_batches(set:count(), #info.quantities, ys, step:active())) do
    -- (a field is done when its verdict is made)
    step:begin(#batch == 1 and batch[1] or (batch[1] .. " to " .. batch[#batch]), 0)
    local all = #info.quantities > 0 and set:fits(info.quantities, batch) or {}
    for _, y in ipairs(batch) do
      step:begin(y)
      local v = fit.verdict(set, y, info.quantities, fopts, all[y])
      if parent[y] == nil then
        v.kind = "phase"
        out.phases[#out.phases + 1] = v
      else
        v.kind, v.parent = "nested", parent[y] or nil
        out.nested[#out.nested + 1] = v
      end
      if v.quantity then collinear(set, v, opts, cache, info.quantities) end
    end
  end
  step:finish()
  return out
end

--- Fits of n records against nq quantities past this many (n * nq per
-- field) are made a few fields at a time while a person watches the
-- progress, so that it moves; at least FIT_BATCH fields a time (each piece
-- reads the quantities again).
M.FIT_BATCH_WORK = 1 << 24
M.FIT_BATCH = 4

--- The fields `ys` in the pieces their fits are made in: one piece, or,
-- when `shown` and the work is large, pieces of FIT_BATCH fields or more.
function M.fit_batches(n, nq, ys, shown)
  local work = n * nq * #ys
  if #ys == 0 then return {} end
  if not shown or work < M.FIT_BATCH_WORK then return { ys } end
  local size = math.max(M.FIT_BATCH, math.ceil(#ys * M.FIT_BATCH_WORK / work))
  local out = {}
  for i = 1, #ys, size do out[#out + 1] = { table.unpack(ys, i, math.min(i + size - 1, #ys)) } end
  return out
end

--- Records whose named phases exceed their wall time (named_host_ns >
-- wall_ns; without named_host_ns, the sum of the phases). The reference
-- prints such records when its caller supplies the wall, saturating
-- unattributed_ns to 0. Returns {n=, of= (records with both), max_over=,
-- median_over=, worst = {seq=, named=, wall=, file=, line=}}.
-- opts.progress: see the header.
function M.overrun(set, info, opts)
  local out = { n = 0, of = 0 }
  if not set:has("wall_ns") then return out end
  info = info or M.schema(set)
  local both = set:range("wall_ns")
  local terms = { { "wall_ns", -1 } }
  if set:has("named_host_ns") then
    both = both:range("named_host_ns")
    terms[2] = { "named_host_ns", 1 }
  else
    for _, p in ipairs(info.phases) do terms[#terms + 1] = { p, 1 } end
    if #terms == 1 then return out end
  end
  out.of = both:count()
  if out.of == 0 then return out end
  local quick = both:lincomb(terms, 0)
  if (quick.max or 0) <= 0 then return out end
  -- some record is over: find them (a column of each term, once)
  local cols = {}
  for i, t in ipairs(terms) do cols[i] = both:values(t[1]) end
  local overs, worst, worst_i = {}, 0, nil
  local n = both:count()
  local step = M.step(opts, "finding the records over their wall", n, "records")
  local CHUNK = 1 << 16
  for first = 1, n, CHUNK do
    step:begin(nil, math.min(CHUNK, n - first + 1))
    for i = first, math.min(first + CHUNK - 1, n) do
      local d = 0
      for k, t in ipairs(terms) do d = d + t[2] * (cols[k][i] or 0) end
      if d > 0 then
        overs[#overs + 1] = d
        if d > worst then worst, worst_i = d, i end
      end
    end
  end
  step:finish()
  out.n = #overs
  if out.n == 0 then return out end
  table.sort(overs)
  out.max_over = worst
  out.median_over = overs[(#overs + 1) // 2]
  local r = both:record(worst_i)
  local row = both:row(worst_i)
  local wall = cols[1][worst_i]
  out.worst = { seq = r.seq, wall = wall, named = wall + worst,
    file = both:columns():get(row, "@file"), line = both:columns():get(row, "@line") }
  -- the exact digits of a u64 past 2^63-1 (a float in Lua), for --raw
  if math.type(wall) == "float" then out.worst.wall_text = r:_text("wall_ns") end
  if terms[2][1] == "named_host_ns" and math.type(cols[2][worst_i]) == "float" then
    out.worst.named_text = r:_text("named_host_ns")
  end
  return out
end

-- ---- variants ---------------------------------------------------------------

--- How much two phase medians must differ (relative to the smaller) to say
-- a tag splits the records, and on how many records a group must stand.
M.VARIANT_RATIO = 0.2
M.VARIANT_MIN_N = 5

--- Tags that split the records into groups whose phases behave
-- differently. A tag (a text field other than kernel_src, or @file across
-- several files) with 2 to 16 values splits the records when, within
-- records of the same shape (the same values of the other tags and of
-- nodes), the median of some phase differs between two of its values by
-- more than 20 % of the smaller, by more than the spread (p90 - median)
-- of either group, and by more than 0.5 % of the median wall. Returns the
-- strongest finding per tag, strongest first: { {tag=, values = {a, b},
-- phase=, medians = {ma, mb}, ratio=, where = "shape=large", n = {na, nb}} }.
-- opts.progress: see the header.
function M.variants(set, opts)
  opts = opts or {}
  local info = M.schema(set)
  local cols = set:columns()
  local tags = {}
  for _, f in ipairs(set:fields()) do
    if cols:kind(f) == "string" and f ~= "kernel_src" then
      local d = set:distinct(f, 17)
      if d >= 2 and d <= 16 then tags[#tags + 1] = f end
    end
  end
  local nfiles = set:distinct("@file", 17)
  if nfiles >= 2 and nfiles <= 16 then tags[#tags + 1] = "@file" end
  if #tags == 0 then return {} end
  local step = M.step(opts, "looking for variants", #tags, "tags")
  local size = nil
  if set:has("nodes") and set:distinct("nodes", 65) <= 64 then size = "nodes" end
  local phases = {}
  for _, p in ipairs(info.phases) do phases[#phases + 1] = p end
  local ratio_min = opts.ratio or M.VARIANT_RATIO
  local min_n = opts.min_n or M.VARIANT_MIN_N
  local found = {}
  for _, tag in ipairs(tags) do
    step:begin(tag)
    local cells = { { set = set, where = {} } }
    local others = {}
    for _, o in ipairs(tags) do if o ~= tag then others[#others + 1] = o end end
    if size then others[#others + 1] = size end
    for _, o in ipairs(others) do
      local next_cells = {}
      for _, c in ipairs(cells) do
        for _, g in ipairs(c.set:group(o)) do
          if g.n >= 2 * min_n then
            local where = { table.unpack(c.where) }
            where[#where + 1] = o .. "=" .. (g.missing and "(none)" or tostring(g.key))
            next_cells[#next_cells + 1] = { set = g.set, where = where }
          end
        end
      end
      cells = next_cells
    end
    local best
    for _, c in ipairs(cells) do
      local groups = {}
      for _, g in ipairs(c.set:group(tag)) do
        if not g.missing and g.n >= min_n then groups[#groups + 1] = g end
      end
      if #groups >= 2 then
        local wall = c.set:has("wall_ns") and c.set:summary("wall_ns").median or 0
        for _, p in ipairs(phases) do
          local sums = {}
          for i, g in ipairs(groups) do sums[i] = g.set:summary(p) end
          for i = 1, #groups do
            for j = i + 1, #groups do
              local a, b = sums[i], sums[j]
              if a.count > 0 and b.count > 0 then
                local d = math.abs(a.median - b.median)
                local lo = math.max(math.min(a.median, b.median), 1)
                local spread = math.max(a.p90 - a.median, b.p90 - b.median)
                local ratio = d / lo
                if ratio > ratio_min and d > spread and d > 0.005 * wall
                  and (not best or ratio > best.ratio) then
                  best = { tag = tag, phase = p, values = { groups[i].key, groups[j].key },
                    medians = { a.median, b.median }, n = { groups[i].n, groups[j].n },
                    ratio = ratio, where = table.concat(c.where, " ") }
                end
              end
            end
          end
        end
      end
    end
    if best then found[#found + 1] = best end
  end
  step:finish()
  table.sort(found, function(x, y) return x.ratio > y.ratio end)
  return found
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
-- opts.progress: see the header.
function M.starvation(set, opts)
  local out = report().printable({ n = set:count(), notes = {} }, function(t)
    return "phaseprobe.starvation\n" .. report().starvation(t)
  end, "phaseprobe.starvation")
  local device = set:has("device_window_ns") and set:has("kernel_ns")
  local residue = set:has("unattributed_ns") or (set:has("wall_ns") and set:has("named_host_ns"))
  local step = M.step(opts, "pricing the starvation", (set:has("wall_ns") and 1 or 0)
    + (device and 6 or 0) + (residue and 1 or 0) + (set:has("probe_ns") and 1 or 0), "summaries")
  if set:has("wall_ns") then
    step:begin("wall_ns")
    out.wall = set:summary("wall_ns")
  end
  if device then
    step:begin("device_window_ns > 0")
    local win = set:range("device_window_ns", 1)
    step:begin("kernel_ns > 0")
    local both = win:range("kernel_ns", 1)
    step:begin("device_window_ns - kernel_ns")
    local s = both:lincomb({ { "device_window_ns", 1 }, { "kernel_ns", -1 } }, 0)
    local some = both:count() > 0
    step:begin("wall_ns")
    local bw = some and both:summary("wall_ns") or nil
    step:begin("device_window_ns")
    local window = some and both:summary("device_window_ns") or nil
    step:begin("kernel_ns")
    out.starvation = { n = both:count(), summary = s, share = share_of(s, bw),
      window = window, kernel = some and both:summary("kernel_ns") or nil }
    if win:count() < out.n then
      out.notes[#out.notes + 1] = string.format(
        "device_window_ns not measured (0) in %s of %s", report().num(out.n - win:count()),
        report().count(out.n, "record"))
    end
    if both:count() < win:count() then
      out.notes[#out.notes + 1] = string.format(
        "kernel_ns not measured (0) in %s of %s with a device window",
        report().num(win:count() - both:count()), report().count(win:count(), "record"))
    end
  else
    out.notes[#out.notes + 1] = "no device_window_ns/kernel_ns fields: starvation not priced"
  end
  if set:has("unattributed_ns") then
    step:begin("unattributed_ns")
    local s = set:summary("unattributed_ns")
    out.residue = { summary = s, share = share_of(s, out.wall) }
  elseif residue then
    step:begin("wall_ns - named_host_ns")
    local s = set:lincomb({ { "wall_ns", 1 }, { "named_host_ns", -1 } }, 0)
    out.residue = { summary = s, share = share_of(s, out.wall) }
  end
  if set:has("probe_ns") then
    step:begin("probe_ns")
    local s = set:summary("probe_ns")
    out.probe = { summary = s, share = share_of(s, out.wall) }
  end
  step:finish()
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
