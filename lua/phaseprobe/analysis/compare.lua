--- phaseprobe.analysis.compare: two groups of dispatches side by side (two shapes,
-- two files, two runs), and which phases explain the difference in
-- per-dispatch cost.
--
--   local compare = require "phaseprobe.analysis.compare"
--   local r = compare.by(set, "shape", "prose", "cjk")
--   local r = compare.sets(set_a, set_b, { labels = { "before", "after" } })
--   -- r.diff: mean wall_ns per dispatch of b minus a
--   -- r.rows: { {name="ptx_ns", a=, b=, diff=, share=}, ... }
--
-- Per-dispatch means are totals over the group's record count, so the
-- rows add up: the phases, unattributed_ns and an "(other)" row (whatever
-- the phases and residue do not account for: saturation, records lacking
-- a field) sum to exactly the difference in mean wall_ns, and their shares
-- to 1. Nested regions are listed apart (they sit inside their phase and
-- are not added).
--
-- Per encode: when both groups carry an `encode` field (opts.encode names
-- another), each group's cost per encode is dispatches per encode times
-- cost per dispatch, and its difference splits exactly into
--   more dispatches   = (d_b - d_a) * m_a
--   costlier ones     = d_b * (m_b - m_a).
--
-- Where it sits: takes record sets (phaseprobe.records), uses their C
-- summaries; `phaseprobe compare` prints the result.
local analyze = require "phaseprobe.analysis.analyze"

local M = {}

local function union(a, b)
  local seen, out = {}, {}
  for _, list in ipairs({ a, b }) do
    for _, x in ipairs(list) do
      if not seen[x] then seen[x] = true; out[#out + 1] = x end
    end
  end
  return out
end

local function encodes(set, field)
  if not set:has(field) then return nil end
  local n = 0
  for _, g in ipairs(set:group(field)) do
    if not g.missing then n = n + 1 end
  end
  return n > 0 and n or nil
end

--- Compares sets a and b. opts: {labels={la, lb}, encode="encode",
-- progress= (phaseprobe.analysis.analyze's header)}.
function M.sets(a, b, opts)
  opts = opts or {}
  local labels = opts.labels or { "a", "b" }
  for i, s in ipairs({ a, b }) do
    if s:count() == 0 then
      error(string.format("phaseprobe.analysis.compare: group '%s' has no records", labels[i]), 2)
    end
    if not s:has("wall_ns") then
      error(string.format("phaseprobe.analysis.compare: group '%s' has no wall_ns field", labels[i]), 2)
    end
  end
  -- records without a wall time take no part
  a, b = a:range("wall_ns"), b:range("wall_ns")
  local ia, ib = analyze.schema(a), analyze.schema(b)
  local phases = union(ia.phases, ib.phases)
  local nested = {}
  for _, n in ipairs(ia.nested) do nested[n.label] = n.parent end
  for _, n in ipairs(ib.nested) do nested[n.label] = nested[n.label] or n.parent end
  local names = {}
  for _, n in ipairs(ia.nested) do names[#names + 1] = n.label end
  for _, n in ipairs(ib.nested) do names[#names + 1] = n.label end
  names = union(names, {})
  local residue = a:has("unattributed_ns") or b:has("unattributed_ns")
  local step = analyze.step(opts, "comparing " .. labels[1] .. " with " .. labels[2],
    1 + #phases + (residue and 1 or 0) + #names, "fields")
  step:begin("wall_ns")
  local r = {
    metric = "wall_ns",
    a = { label = labels[1], n = a:count(), mean = a:per_record("wall_ns") },
    b = { label = labels[2], n = b:count(), mean = b:per_record("wall_ns") },
    rows = {}, nested = {},
  }
  r.diff = r.b.mean - r.a.mean
  local function share(d)
    if r.diff == 0 then return nil end
    return d / r.diff
  end
  local acc = 0
  local function add(name, kind)
    step:begin(name)
    local ma, mb = a:per_record(name), b:per_record(name)
    local row = { name = name, kind = kind, a = ma, b = mb, diff = mb - ma }
    acc = acc + row.diff
    r.rows[#r.rows + 1] = row
  end
  for _, p in ipairs(phases) do add(p, "phase") end
  if residue then add("unattributed_ns", "residue") end
  local other = r.diff - acc
  r.rows[#r.rows + 1] = { name = "(other)", kind = "other", a = nil, b = nil, diff = other }
  for _, row in ipairs(r.rows) do row.share = share(row.diff) end
  for _, name in ipairs(names) do
    step:begin(name)
    local ma, mb = a:per_record(name), b:per_record(name)
    r.nested[#r.nested + 1] = { name = name, parent = nested[name], a = ma, b = mb,
      diff = mb - ma, share = share(mb - ma) }
  end
  local ef = opts.encode or "encode"
  local ea, eb = encodes(a, ef), encodes(b, ef)
  if ea and eb then
    local da, db = r.a.n / ea, r.b.n / eb
    local pe = { field = ef, a_encodes = ea, b_encodes = eb, a_dispatches = da,
      b_dispatches = db, a = da * r.a.mean, b = db * r.b.mean }
    pe.diff = pe.b - pe.a
    pe.more_dispatches = (db - da) * r.a.mean
    pe.costlier_dispatches = db * (r.b.mean - r.a.mean)
    r.per_encode = pe
  end
  step:finish()
  return require("phaseprobe.output.report").printable(r, function(t)
    return "phaseprobe.comparison\n" .. require("phaseprobe.output.report").compare(t)
  end, "phaseprobe.comparison")
end

local function label(field, v)
  return string.format("%s=%s", field, tostring(v))
end

--- Compares the records whose `field` equals va against those equal to vb
-- (a value given as text matches as the command line's F=V does: exactly,
-- a number by its digits; records.equal).
function M.by(set, field, va, vb, opts)
  opts = opts or {}
  local records = require "phaseprobe.records"
  local a, b = records.equal(set, field, va), records.equal(set, field, vb)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.labels = o.labels or { label(field, va), label(field, vb) }
  return M.sets(a, b, o)
end

--- The rows ordered by how much of the difference they explain.
function M.ranked(r)
  local rows = {}
  for i, row in ipairs(r.rows) do rows[i] = row end
  table.sort(rows, function(x, y)
    if math.abs(x.diff) ~= math.abs(y.diff) then return math.abs(x.diff) > math.abs(y.diff) end
    return x.name < y.name
  end)
  return rows
end

return M
