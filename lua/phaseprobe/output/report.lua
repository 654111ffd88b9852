--- phaseprobe.output.report: aligned text tables and number formats, for the REPL
-- and the terminal.
--
--   local report = require "phaseprobe.output.report"
--   print(report.table(rows, {
--     { key = "name", title = "phase" },
--     { key = "median", title = "median", fmt = report.ns },
--   }))
--
-- Numbers are right-aligned, text left-aligned; widths count UTF-8
-- characters. Nanosecond figures print with a unit and three significant
-- digits (950 ns, 12.3 us, 4.56 ms, 1.23 s) unless report.raw is set, when
-- they print as integer ns.
--
-- Where it sits: the end of the flow for text: record sets print through
-- it, and the commands print the analyses with it.
local M = {}

M.raw = false

local function sig3(v)
  local a = math.abs(v)
  if a >= 100 then return string.format("%.0f", v) end
  if a >= 10 then return string.format("%.1f", v) end
  return string.format("%.2f", v)
end

--- Nanoseconds with a unit: "950 ns", "12.3 us", "4.56 ms", "1.23 s".
function M.ns(v)
  if v == nil or v ~= v then return "-" end
  if M.raw then return string.format("%.0f", v) end
  local a = math.abs(v)
  if a < 1e3 then
    if math.type(v) == "integer" or v == math.floor(v) then
      return string.format("%d ns", math.floor(v))
    end
    return sig3(v) .. " ns"
  elseif a < 1e6 then return sig3(v / 1e3) .. " us"
  elseif a < 1e9 then return sig3(v / 1e6) .. " ms"
  end
  return sig3(v / 1e9) .. " s"
end

--- A signed ns difference: "+1.20 ms", "-950 ns".
function M.dns(v)
  if v == nil or v ~= v then return "-" end
  local s = M.ns(math.abs(v))
  if v > 0 then return "+" .. s elseif v < 0 then return "-" .. s end
  return s
end

--- A share (0.25 -> "25.0%").
function M.pct(v)
  if v == nil or v ~= v or v == math.huge or v == -math.huge then return "-" end
  if math.abs(v) < 0.0005 then v = 0 end -- no "-0.0%"
  return string.format("%.1f%%", v * 100)
end

--- A plain number: integers as they are, others to 4 significant digits.
function M.num(v)
  if v == nil then return "-" end
  if type(v) ~= "number" then return tostring(v) end
  if v ~= v then return "-" end
  if math.type(v) == "integer" then return tostring(v) end
  if v == math.floor(v) and math.abs(v) < 1e15 then
    return string.format("%d", math.floor(v))
  end
  return string.format("%.4g", v)
end

--- A fit quality or R^2 with two decimals.
function M.q(v)
  if v == nil or v ~= v then return "-" end
  return string.format("%.2f", v)
end

local function width(s)
  return utf8.len(s) or #s
end

local function pad(s, w, right)
  local n = w - width(s)
  if n <= 0 then return s end
  if right then return string.rep(" ", n) .. s end
  return s .. string.rep(" ", n)
end

--- Renders rows as an aligned table.
-- columns: list of {key=, title=, fmt=function(value, row), align="left"|"right"}
-- (key may also be a function(row)). opts: {indent=, sep=} (sep: between
-- columns, default two spaces; the header is underlined with dashes).
function M.table(rows, columns, opts)
  opts = opts or {}
  local sep = opts.sep or "  "
  local indent = opts.indent or ""
  local cells, widths, right = {}, {}, {}
  for c, col in ipairs(columns) do
    widths[c] = width(col.title or tostring(col.key))
  end
  for r, row in ipairs(rows) do
    cells[r] = {}
    for c, col in ipairs(columns) do
      local v
      if type(col.key) == "function" then v = col.key(row) else v = row[col.key] end
      local s
      if col.fmt then s = col.fmt(v, row)
      elseif type(v) == "number" then s = M.num(v)
      elseif v == nil then s = "-"
      else s = tostring(v) end
      cells[r][c] = s
      if width(s) > widths[c] then widths[c] = width(s) end
      if right[c] == nil and v ~= nil then
        right[c] = type(v) == "number"
      end
    end
  end
  for c, col in ipairs(columns) do
    if col.align then right[c] = col.align == "right" end
  end
  local out = {}
  local function line(parts)
    out[#out + 1] = (indent .. table.concat(parts, sep)):gsub("%s+$", "")
  end
  local head, rule = {}, {}
  for c, col in ipairs(columns) do
    head[c] = pad(col.title or tostring(col.key), widths[c], right[c])
    rule[c] = string.rep("-", widths[c])
  end
  line(head)
  line(rule)
  for r = 1, #rows do
    local parts = {}
    for c = 1, #columns do parts[c] = pad(cells[r][c], widths[c], right[c]) end
    line(parts)
  end
  return table.concat(out, "\n")
end

--- The statistics columns for summaries (of ns fields unless fmt given).
function M.summary_columns(fmt)
  fmt = fmt or M.ns
  local function f(v) return fmt(v) end
  return {
    { key = "count", title = "count", fmt = M.num },
    { key = "min", title = "min", fmt = f },
    { key = "median", title = "median", fmt = f },
    { key = "mean", title = "mean", fmt = f },
    { key = "p90", title = "p90", fmt = f },
    { key = "p99", title = "p99", fmt = f },
    { key = "max", title = "max", fmt = f },
    { key = "sum", title = "sum", fmt = f },
  }
end

--- A summary table with one row per named summary:
-- items = { {name=, summary={count=,...}, [extra keys]}, ... }
function M.summaries(items, opts)
  opts = opts or {}
  local rows = {}
  for i, it in ipairs(items) do
    local row = {}
    for k, v in pairs(it.summary or {}) do row[k] = v end
    for k, v in pairs(it) do if k ~= "summary" then row[k] = v end end
    rows[i] = row
  end
  local cols = { { key = "name", title = opts.title or "field" } }
  local fmt = opts.fmt
  for _, c in ipairs(M.summary_columns(fmt)) do cols[#cols + 1] = c end
  for _, c in ipairs(opts.extra or {}) do cols[#cols + 1] = c end
  return M.table(rows, cols, opts)
end

-- ---- analysis reports ------------------------------------------------------

local function lines(t) return table.concat(t, "\n") end

--- Per-phase time (analyze.phases): summary columns plus share of wall.
function M.phases(rows)
  local items = {}
  for i, r in ipairs(rows) do
    local name = r.name
    if r.kind == "nested" then name = "  " .. name .. (r.parent and (" (in " .. r.parent .. ")") or "") end
    items[i] = { name = name, summary = r.summary, share = r.share }
  end
  return M.summaries(items, { title = "phase", extra = {
    { key = "share", title = "of wall", fmt = M.pct } } })
end

--- Scaling verdicts (analyze.scaling).
function M.scaling(s)
  local rows = {}
  local function add(v, indent)
    rows[#rows + 1] = {
      name = indent .. v.name, n = v.n, median = v.median, verdict = v.verdict,
      fixed = v.fixed_ns, per = v.ns_per_unit, quality = v.quality, r2 = v.r2,
      reason = v.reason .. (#v.also > 0 and ("; also fits " .. table.concat(v.also, ", ")) or "")
        .. (#v.notes > 0 and ("; " .. table.concat(v.notes, "; ")) or ""),
    }
  end
  for _, v in ipairs(s.phases) do add(v, "") end
  for _, v in ipairs(s.nested) do add(v, "  ") end
  local head = "quantities: " .. (#s.quantities > 0 and table.concat(s.quantities, ", ") or "none")
  return head .. "\n" .. M.table(rows, {
    { key = "name", title = "phase" },
    { key = "n", title = "n" },
    { key = "median", title = "median", fmt = M.ns },
    { key = "verdict", title = "verdict" },
    { key = "fixed", title = "fixed/dispatch", fmt = M.ns },
    { key = "per", title = "ns/unit", fmt = M.num },
    { key = "quality", title = "TS quality", fmt = M.q },
    { key = "r2", title = "LS R2", fmt = M.q },
    { key = "reason", title = "why", align = "left" },
  })
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
  return M.table(rows, {
    { key = "q", title = "quantity" }, { key = "n", title = "n" },
    { key = "distinct", title = "distinct" },
    { key = "ls_a", title = "LS fixed", fmt = M.ns }, { key = "ls_b", title = "LS ns/unit", fmt = M.num },
    { key = "ls_r2", title = "LS R2", fmt = M.q },
    { key = "ts_a", title = "TS fixed", fmt = M.ns }, { key = "ts_b", title = "TS ns/unit", fmt = M.num },
    { key = "ts_q", title = "TS quality", fmt = M.q }, { key = "effect", title = "effect", fmt = M.pct },
  })
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
  local out = { M.table(rows, {
    { key = "name", title = "" }, { key = "n", title = "n" },
    { key = "median", title = "median", fmt = M.ns }, { key = "mean", title = "mean", fmt = M.ns },
    { key = "p90", title = "p90", fmt = M.ns }, { key = "sum", title = "total", fmt = M.ns },
    { key = "share", title = "of wall", fmt = M.pct }, { key = "what", title = "what" },
  }) }
  for _, n in ipairs(st.notes or {}) do out[#out + 1] = "note: " .. n end
  return lines(out)
end

--- A comparison (compare.sets), rows ranked by how much they explain.
function M.compare(r)
  local ranked = require("phaseprobe.analysis.compare").ranked(r)
  local out = {
    string.format("%s: %d dispatches, mean wall %s", r.a.label, r.a.n, M.ns(r.a.mean)),
    string.format("%s: %d dispatches, mean wall %s", r.b.label, r.b.n, M.ns(r.b.mean)),
    string.format("difference per dispatch (%s - %s): %s", r.b.label, r.a.label, M.dns(r.diff)),
  }
  local rows = {}
  for _, row in ipairs(ranked) do rows[#rows + 1] = row end
  rows[#rows + 1] = { name = "total", a = r.a.mean, b = r.b.mean, diff = r.diff,
    share = r.diff ~= 0 and 1 or nil }
  out[#out + 1] = M.table(rows, {
    { key = "name", title = "phase" },
    { key = "a", title = r.a.label, fmt = M.ns },
    { key = "b", title = r.b.label, fmt = M.ns },
    { key = "diff", title = "difference", fmt = M.dns },
    { key = "share", title = "of difference", fmt = M.pct },
  })
  if #r.nested > 0 then
    out[#out + 1] = "nested regions (inside their phase, not added):"
    out[#out + 1] = M.table(r.nested, {
      { key = "name", title = "region" }, { key = "parent", title = "in" },
      { key = "a", title = r.a.label, fmt = M.ns }, { key = "b", title = r.b.label, fmt = M.ns },
      { key = "diff", title = "difference", fmt = M.dns },
      { key = "share", title = "of difference", fmt = M.pct },
    }, { indent = "  " })
  end
  local pe = r.per_encode
  if pe then
    out[#out + 1] = string.format(
      "per encode (by %s): %s %.2f dispatches, %s; %s %.2f dispatches, %s; difference %s"
        .. " = %s from more dispatches + %s from costlier dispatches",
      pe.field, r.a.label, pe.a_dispatches, M.ns(pe.a), r.b.label, pe.b_dispatches, M.ns(pe.b),
      M.dns(pe.diff), M.dns(pe.more_dispatches), M.dns(pe.costlier_dispatches))
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
      what = string.format("%s (miss %s, hit %s over %d/%d dispatches)", what,
        M.ns(s.price.miss_cost), M.ns(s.price.hit_cost), s.price.n_miss, s.price.n_hit)
    end
    steps[i] = { what = what, wall = -s.saved_wall, enq = s.saved_enqueue and -s.saved_enqueue }
  end
  if #steps > 0 then
    out[#out + 1] = M.table(steps, {
      { key = "what", title = "step" },
      { key = "wall", title = "wall/dispatch", fmt = M.dns },
      { key = "enq", title = "enqueue/dispatch", fmt = M.dns },
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
    add(string.format("wall per encode (%s -> %s dispatches)",
      d and string.format("%.2f", d) or "?", M.num(pe.projected_dispatches)),
      pe.measured and pe.measured.wall, pe.projected.wall,
      d and v.wall and d * v.wall, nil)
    if pe.projected.enqueue then
      add("enqueue per encode", pe.measured and pe.measured.enqueue, pe.projected.enqueue,
        d and v.enqueue and d * v.enqueue, nil)
    end
  end
  local cols = {
    { key = "name", title = string.format("%d dispatches", r.n) },
    { key = "measured", title = "measured", fmt = M.ns },
    { key = "projected", title = "projected", fmt = M.ns },
    { key = "change", title = "change", fmt = M.pct },
  }
  if r.variant then
    cols[#cols + 1] = { key = "variant", title = "variant measured", fmt = M.ns }
    cols[#cols + 1] = { key = "err", title = "projection error", fmt = M.pct }
  end
  out[#out + 1] = M.table(rows, cols)
  for _, n in ipairs(r.notes or {}) do out[#out + 1] = "note: " .. n end
  return lines(out)
end

local function is_list(t)
  local n = #t
  if n == 0 then return false end
  local c = 0
  for _ in pairs(t) do c = c + 1 end
  return c == n
end

--- Any Lua value as text: scalars as they are, lists of records as a
-- table, other tables as sorted "key  value" lines (nested ones indented).
function M.value(v, indent)
  indent = indent or ""
  if type(v) ~= "table" then
    if type(v) == "number" then return indent .. M.num(v) end
    return indent .. tostring(v)
  end
  local mt = getmetatable(v)
  if mt and mt.__tostring then return indent .. tostring(v) end
  if is_list(v) then
    local all_tables, keys, seen = true, {}, {}
    for _, row in ipairs(v) do
      -- tables, or records (phaseprobe.record: pairs gives their fields)
      local mt = getmetatable(row)
      if type(row) ~= "table" and not (mt and mt.__name == "phaseprobe.record") then
        all_tables = false
        break
      end
      for k, x in pairs(row) do
        if type(x) ~= "table" and not seen[k] then seen[k] = true; keys[#keys + 1] = k end
      end
    end
    if all_tables and #keys > 0 then
      table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
      local cols = {}
      for i, k in ipairs(keys) do cols[i] = { key = k, title = tostring(k) } end
      return M.table(v, cols, { indent = indent })
    end
    local parts = {}
    for i, x in ipairs(v) do parts[i] = type(x) == "table" and "{...}" or M.num(x) end
    return indent .. table.concat(parts, ", ")
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local w = 0
  for _, k in ipairs(keys) do w = math.max(w, #tostring(k)) end
  local out = {}
  for _, k in ipairs(keys) do
    local x = v[k]
    if type(x) == "table" and not (getmetatable(x) or {}).__tostring then
      out[#out + 1] = indent .. tostring(k) .. ":"
      out[#out + 1] = M.value(x, indent .. "  ")
    else
      local text = type(x) == "number" and M.num(x) or tostring(x)
      out[#out + 1] = indent .. pad(tostring(k), w) .. "  " .. text
    end
  end
  return lines(out)
end

--- A parse report (pp.parse.*): the counts, then each error as file:line:column: what.
function M.parse(rep, opts)
  opts = opts or {}
  local out = { string.format("%d lines: %d records, %d rejected, %d other",
    rep.total, rep.parsed, rep.rejected, rep.other) }
  local limit = opts.limit or 20
  for i, e in ipairs(rep.errors or {}) do
    if i > limit then
      out[#out + 1] = string.format("... and %d more rejected lines", rep.rejected - limit)
      break
    end
    out[#out + 1] = string.format("%s:%d:%d: %s", e.file, e.line, e.column, e.what)
  end
  return lines(out)
end

return M
