--- phaseprobe.output.analyses: the analyses' results as text: time per
-- phase, scaling verdicts and their fits, starvation and residue, the
-- overrun and variant warnings, comparisons and what-if projections.
--
--   local analyses = require "phaseprobe.output.analyses"
--   print(analyses.scaling(analyze.scaling(set)))
--
-- Sits after lua/phaseprobe/analysis/ (its results in, text out), on the
-- text side of the output next to report.lua, which re-exports each of
-- these (report.phases, report.scaling, ...) for the commands and the
-- results' tostring. What this module decides is which rows and columns an
-- analysis becomes and what its notes say; every number, table and wrapped
-- line is report.lua's (its number style, report.table, report.wrap, and
-- report.raw, report.wide and report.width as the command set them).
local R = require "phaseprobe.output.report"
local M = {}

local function lines(t) return table.concat(t, "\n") end

local width = R.text_width

--- Per-phase time (analyze.phases): summary columns plus share of wall;
-- each nested region right under the phase it was measured in, indented.
function M.phases(rows)
  local items, placed = {}, {}
  local function add(r, indent)
    items[#items + 1] = { name = indent .. r.name, summary = r.summary, share = r.share }
  end
  for _, r in ipairs(rows) do
    if r.kind ~= "nested" then
      add(r, "")
      for _, n in ipairs(rows) do
        if n.kind == "nested" and n.parent == r.name then
          add(n, "  ")
          placed[n] = true
        end
      end
    end
  end
  for _, n in ipairs(rows) do
    if n.kind == "nested" and not placed[n] then add(n, "  ") end
  end
  return R.summaries(items, { title = "phase", extra = {
    { key = "share", title = "of wall", fmt = R.pct } } })
end

-- The columns of a table of rows: first, then "n" where the rows were
-- fitted over different numbers of records, then rest; and whether every
-- row has the same n.
local function with_n(rows, first, rest)
  local cols, same = { first }, true
  for _, r in ipairs(rows) do if r.n ~= rows[1].n then same = false end end
  if not same then cols[#cols + 1] = { key = "n", title = "n" } end
  for _, c in ipairs(rest) do cols[#cols + 1] = c end
  return cols, same
end

--- Scaling verdicts (analyze.scaling): one row per phase, its explanation
-- under it when the row would pass the width.
function M.scaling(s)
  local rows = {}
  local function add(v, indent)
    local why = { v.reason }
    if #v.also > 0 then why[#why + 1] = "also fits " .. table.concat(v.also, ", ") end
    for _, n in ipairs(v.notes) do why[#why + 1] = n end
    rows[#rows + 1] = {
      name = indent .. v.name, n = v.n, median = v.median, verdict = v.verdict,
      fixed = v.fixed_ns, per = v.ns_per_unit ~= 0 and v.ns_per_unit or nil,
      quality = v.quality, r2 = v.r2, reason = table.concat(why, "; "), _raw = v._raw,
    }
  end
  for _, v in ipairs(s.phases) do add(v, "") end
  for _, v in ipairs(s.nested) do add(v, "  ") end
  local head = "quantities: " .. (#s.quantities > 0 and table.concat(s.quantities, ", ") or "none")
  if s.untested and #s.untested > 0 then
    local parts = {}
    for _, u in ipairs(s.untested) do parts[#parts + 1] = u.name .. " (" .. u.why .. ")" end
    local d = require("phaseprobe.analysis.fit").defaults
    head = head .. "\n" .. table.concat(R.wrap(string.format("not used for verdicts (a quantity needs "
      .. "%s, each held by %s of the records or %s of them): %s", R.count(d.min_distinct, "value"),
      R.pct(d.min_share), R.num(d.min_records), table.concat(parts, "; ")), R.width, ""), "\n")
  end
  local cols = with_n(rows, { key = "name", title = "phase" }, {
    { key = "median", title = "median", align = "right",
      fmt = function(x, row) return R.figure("median", x, row, R.ns) end },
    { key = "verdict", title = "verdict" },
    { key = "fixed", title = "fixed", align = "right",
      fmt = function(x, row) return R.figure("fixed", x, row, R.ns) end },
    { key = "per", title = "per unit", fmt = R.ns, align = "right" },
    { key = "quality", title = "quality", fmt = R.q, align = "right" },
    { key = "r2", title = "LS R2", fmt = R.q, align = "right" },
    { key = "reason", title = "why", align = "left", wrap = true },
  })
  return head .. "\n" .. R.table(rows, cols)
end

--- All fits of one verdict: one row per quantity.
function M.fits(v)
  local rows = {}
  local qs = {}
  for q in pairs(v.fits) do qs[#qs + 1] = q end
  table.sort(qs)
  for _, q in ipairs(qs) do
    local f = v.fits[q]
    rows[#rows + 1] = { q = q, n = f.n, distinct = f.distinct_x,
      ls_a = f.ls and f.ls.intercept, ls_b = f.ls and f.ls.slope, ls_r2 = f.ls and f.ls.r2,
      ts_a = f.ts and f.ts.intercept, ts_b = f.ts and f.ts.slope,
      ts_q = f.ts and f.ts.quality, effect = f.effect }
  end
  local cols, same = with_n(rows, { key = "q", title = "quantity" }, {
    { key = "distinct", title = "values" },
    { key = "ls_a", title = "LS fixed", fmt = R.ns, align = "right" },
    { key = "ls_b", title = "LS slope", fmt = R.ns, align = "right" },
    { key = "ls_r2", title = "LS R2", fmt = R.q, align = "right" },
    { key = "ts_a", title = "TS fixed", fmt = R.ns, align = "right" },
    { key = "ts_b", title = "TS slope", fmt = R.ns, align = "right" },
    { key = "ts_q", title = "quality", fmt = R.q, align = "right" },
    { key = "effect", title = "effect", fmt = R.pct, align = "right" },
  })
  return (same and rows[1] and (R.count(rows[1].n, "record") .. " each\n") or "") .. R.table(rows, cols)
end

--- Starvation, residue and probe overhead (analyze.starvation).
function M.starvation(st)
  local rows = {}
  local function add(name, part, what)
    if not part then return end
    local s = part.summary
    rows[#rows + 1] = { name = name, n = s.count, median = s.median, mean = s.mean,
      p90 = s.p90, sum = s.sum, share = part.share, what = what }
  end
  add("starvation", st.starvation, "device_window_ns - kernel_ns")
  add("residue", st.residue, "unattributed_ns")
  add("probe", st.probe, "probe_ns (the probe's own cost)")
  local out = {}
  if #rows > 0 then out[1] = R.table(rows, {
    { key = "name", title = "" }, { key = "n", title = "n" },
    { key = "median", title = "median", fmt = R.ns }, { key = "mean", title = "mean", fmt = R.ns },
    { key = "p90", title = "p90", fmt = R.ns }, { key = "sum", title = "total", fmt = R.ns },
    { key = "share", title = "of wall", fmt = R.pct },
    { key = "what", title = "what", align = "left", wrap = true },
  }) end
  for _, n in ipairs(st.notes or {}) do
    for _, l in ipairs(R.wrap("note: " .. n, R.width, "")) do out[#out + 1] = l end
  end
  return lines(out)
end

--- Records whose named phases exceed wall (analyze.overrun): a note of a
-- few wrapped lines, or nil when there are none.
function M.overrun(o)
  if not o or o.n == 0 then return nil end
  local w = o.worst
  local where = w.file and string.format(" (%s:%s)", tostring(w.file), tostring(w.line)) or ""
  local text = string.format("note: named phases exceed wall_ns on %s of %s (%s), by up "
    .. "to %s (median %s); worst: seq=%s%s, named %s, wall %s. unattributed_ns is 0 on them "
    .. "(saturated), so the residue reads low and phase shares of wall can pass 100%%: the wall "
    .. "was supplied by the caller (the reference's emit) or time was charged outside the "
    .. "dispatch.", R.num(o.n), R.count(o.of, "record"), R.pct(o.n / o.of), R.ns(o.max_over),
    R.ns(o.median_over), tostring(w.seq or "?"), where,
    R.raw and w.named_text or R.ns(w.named), R.raw and w.wall_text or R.ns(w.wall))
  return table.concat(R.wrap(text, R.width, ""), "\n")
end

--- Tags that split the records into variants (analyze.variants): a warning
-- with the --where that takes one, or nil.
function M.variants(found)
  if not found or #found == 0 then return nil end
  local out = {}
  for _, v in ipairs(found) do
    local a, b = tostring(v.values[1]), tostring(v.values[2])
    local text = string.format("warning: %s splits the records into groups whose phases behave "
      .. "differently: %s median %s with %s=%s, %s with %s=%s%s. Verdicts and plots over the mix "
      .. "can mislead: take one variant (--where %s=%s) or set them side by side (report --group "
      .. "%s; compare --by %s %s %s).", v.tag, v.phase, R.ns(v.medians[1]), v.tag, a,
      R.ns(v.medians[2]), v.tag, b, v.where ~= "" and (" (" .. v.where .. ")") or "", v.tag, a,
      v.tag, v.tag, a, b)
    for _, l in ipairs(R.wrap(text, R.width, "")) do out[#out + 1] = l end
  end
  return table.concat(out, "\n")
end

-- A number of dispatches that may be a fraction (per encode): "2.50
-- dispatches", "1 dispatch".
local function dispatches(d)
  return R.plain(d) .. (d == 1 and " dispatch" or " dispatches")
end

-- The tables of a comparison with column heads ha, hb.
local function compare_tables(r, ranked, ha, hb, wide)
  local out = {}
  local rows = {}
  for _, row in ipairs(ranked) do rows[#rows + 1] = row end
  rows[#rows + 1] = { name = "total", a = r.a.mean, b = r.b.mean, diff = r.diff,
    share = r.diff ~= 0 and 1 or nil }
  out[#out + 1] = R.table(rows, {
    { key = "name", title = "phase" },
    { key = "a", title = ha, fmt = R.ns },
    { key = "b", title = hb, fmt = R.ns },
    { key = "diff", title = "difference", fmt = R.dns },
    { key = "share", title = "of difference", fmt = R.pct },
  }, { wide = wide })
  if #r.nested > 0 then
    out[#out + 1] = "nested regions (inside their phase, not added):"
    out[#out + 1] = R.table(r.nested, {
      { key = "name", title = "region" }, { key = "parent", title = "in" },
      { key = "a", title = ha, fmt = R.ns }, { key = "b", title = hb, fmt = R.ns },
      { key = "diff", title = "difference", fmt = R.dns },
      { key = "share", title = "of difference", fmt = R.pct },
    }, { indent = "  ", wide = wide })
  end
  return out
end

local function widest(list)
  local w = 0
  for _, text in ipairs(list) do
    for l in tostring(text):gmatch("[^\n]+") do w = math.max(w, width(l)) end
  end
  return w
end

-- Shorter names for two labels: the values of "F=a" and "F=b", the last
-- parts of two paths, or nil (each pair distinct and not empty).
local function short_labels(la, lb)
  local out = {}
  local fa, va = la:match("^([^=]+)=(.+)$")
  local fb, vb = lb:match("^([^=]+)=(.+)$")
  if fa and fa == fb and va ~= vb then out[#out + 1] = { va, vb } end
  local ba, bb = la:match("([^/]+)/*$"), lb:match("([^/]+)/*$")
  if ba and bb and ba ~= bb and (ba ~= la or bb ~= lb) then out[#out + 1] = { ba, bb } end
  out[#out + 1] = { "A", "B" }
  return out
end

--- A comparison (compare.sets), rows ranked by how much they explain.
-- The columns are headed by the two labels when the tables then fit
-- report.width (always with report.wide), else by shorter names (a tag's
-- two values, the files' last names, or A and B), each said in full above.
function M.compare(r)
  local ranked = require("phaseprobe.analysis.compare").ranked(r)
  local la, lb = tostring(r.a.label), tostring(r.b.label)
  local ha, hb = la, lb
  if not R.wide and widest(compare_tables(r, ranked, ha, hb, true)) > R.width then
    for _, pair in ipairs(short_labels(la, lb)) do
      ha, hb = pair[1], pair[2]
      if widest(compare_tables(r, ranked, ha, hb, true)) <= R.width then break end
    end
  end
  local tables = compare_tables(r, ranked, ha, hb)
  local out = {}
  local function say(text)
    if R.wide then out[#out + 1] = text; return end
    for _, l in ipairs(R.wrap(text, R.width, "    ", "")) do out[#out + 1] = l end
  end
  -- each group said in full: its column's head is the end of its label
  -- (a tag's value, a file's name), or A and B, said here
  for _, g in ipairs { { ha, la, r.a }, { hb, lb, r.b } } do
    local named = g[2]:sub(-#g[1]) == g[1] and g[2] or (g[1] .. " = " .. g[2])
    say(string.format("%s: %s, mean wall %s", named, R.count(g[3].n, "dispatch"), R.ns(g[3].mean)))
  end
  say(string.format("difference per dispatch (%s - %s): %s", hb, ha, R.dns(r.diff)))
  for _, t in ipairs(tables) do out[#out + 1] = t end
  local pe = r.per_encode
  if pe then
    say(string.format(
      "per encode (by %s): %s %s, %s; %s %s, %s; difference %s"
        .. " = %s from more dispatches + %s from costlier dispatches",
      pe.field, ha, dispatches(pe.a_dispatches), R.ns(pe.a), hb, dispatches(pe.b_dispatches), R.ns(pe.b),
      R.dns(pe.diff), R.dns(pe.more_dispatches), R.dns(pe.costlier_dispatches)))
  end
  return lines(out)
end

--- A what-if projection (whatif.project / whatif.check).
function M.whatif(r)
  local out = {}
  local steps = {}
  for i, s in ipairs(r.steps) do
    local what = s.what
    if s.price then
      what = string.format("%s (miss %s over %s, hit %s over %s)", what,
        R.ns(s.price.miss_cost), R.count(s.price.n_miss, "dispatch"), R.ns(s.price.hit_cost),
        R.num(s.price.n_hit))
    end
    steps[i] = { what = what, wall = -s.saved_wall, enq = s.saved_enqueue and -s.saved_enqueue }
  end
  if #steps > 0 then
    out[#out + 1] = R.table(steps, {
      { key = "what", title = "step" },
      { key = "wall", title = "wall/dispatch", fmt = R.dns },
      { key = "enq", title = "enqueue/dispatch", fmt = R.dns },
    })
  end
  local rows = {}
  local function add(name, m, p, v, e)
    rows[#rows + 1] = { name = name, measured = m, projected = p, variant = v, err = e,
      change = (m and p and m ~= 0) and (p - m) / m or nil }
  end
  local v, e = r.variant or {}, r.error or {}
  add("wall per dispatch", r.measured.wall, r.projected.wall, v.wall, e.wall)
  if r.projected.enqueue then
    add("enqueue per dispatch", r.measured.enqueue, r.projected.enqueue, v.enqueue, e.enqueue)
  end
  local pe = r.per_encode
  if pe then
    local d = pe.dispatches
    add(string.format("wall per encode (%s -> %s)",
      d and R.plain(d) or "?", R.count(pe.projected_dispatches, "dispatch")),
      pe.measured and pe.measured.wall, pe.projected.wall,
      d and v.wall and d * v.wall, nil)
    if pe.projected.enqueue then
      add("enqueue per encode", pe.measured and pe.measured.enqueue, pe.projected.enqueue,
        d and v.enqueue and d * v.enqueue, nil)
    end
  end
  local cols = {
    { key = "name", title = R.count(r.n, "dispatch") },
    { key = "measured", title = "measured", fmt = R.ns },
    { key = "projected", title = "projected", fmt = R.ns },
    { key = "change", title = "change", fmt = R.pct },
  }
  if r.variant then
    cols[#cols + 1] = { key = "variant", title = "variant measured", fmt = R.ns }
    cols[#cols + 1] = { key = "err", title = "projection error", fmt = R.pct }
  end
  out[#out + 1] = R.table(rows, cols)
  for _, n in ipairs(r.notes or {}) do
    for _, l in ipairs(R.wrap("note: " .. n, R.width, "")) do out[#out + 1] = l end
  end
  return lines(out)
end

return M
