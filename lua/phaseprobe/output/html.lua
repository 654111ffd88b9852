-- phaseprobe.output.html: one self-contained HTML report (no scripts, no network:
-- the page's own Content-Security-Policy forbids both).
--
--   html.describe(set, opts) -> desc      the report as plain data
--   html.render(desc)        -> string    the page for a description
--   html.report(set, opts)   -> string    render(describe(set, opts))
--   html.write(set, path, opts) -> true | nil, message
--
-- opts: title=, source= (shown under the title), group= (tag or field to
-- group by; default the `shape` tag, else the first tag, else `nodes`),
-- by= (the quantity phases are plotted against when no fit names one;
-- default `nodes`), fits = { [phase label] = {intercept=, slope=, verdict=,
-- quantity=, r2=} } (from the analysis module; phases without one get
-- html.fallback_fit), nested = false to leave nested regions out,
-- max_points = points drawn per scatter (default html.MAX_POINTS; all
-- records are fitted).
--
-- The description (what render takes) is:
--   { title=, source=, notes = {string}, summary = {{label, value}},
--     group_by=, groups = { {name=, n=, rows = {row}, counts = {{name, mean}}} },
--     bars = <svg.stacked_bars options>, scatters = { {label=, svg=<svg.scatter options>} } }
--   row = { name=, kind = "phase"|"nested"|"residue"|"total"|"device", parent=,
--           mean=, median=, min=, max=, share= (of mean wall, 0..1, or nil) }
local recview = require "phaseprobe.recview"
local svg = require "phaseprobe.output.svg"

local M = {}
local esc = svg.esc

-- Points drawn per scatter at most (all of them are fitted).
M.MAX_POINTS = 2000

------------------------------------------------------------------------------
-- statistics
------------------------------------------------------------------------------

local function stats(values)
  local n = #values
  if n == 0 then return { n = 0, mean = 0, median = 0, min = 0, max = 0 } end
  local sorted, sum = {}, 0
  for i, v in ipairs(values) do
    sorted[i] = v
    sum = sum + v
  end
  table.sort(sorted)
  local median = n % 2 == 1 and sorted[(n + 1) // 2] or (sorted[n // 2] + sorted[n // 2 + 1]) / 2
  return { n = n, mean = sum / n, median = median, min = sorted[1], max = sorted[n] }
end

-- Fallback, used only where the analysis module supplied no fit: ordinary
-- least squares of y on x with a plain verdict. "scales with q" when the
-- line explains at least half the variance (R^2 >= 0.5) and its slope
-- carries at least a fifth of the mean time at the mean quantity; "fixed per
-- dispatch" otherwise; no verdict without spread in the quantity.
function M.fallback_fit(points, quantity)
  local n = #points
  local fit = { quantity = quantity, fallback = true, n = n, method = "least-squares" }
  if n < 3 then
    fit.verdict = ("too few dispatches (%d) to fit"):format(n)
    return fit
  end
  local sx, sy = 0, 0
  for _, p in ipairs(points) do
    sx = sx + p[1]
    sy = sy + p[2]
  end
  local mx, my = sx / n, sy / n
  local sxx, sxy, syy = 0, 0, 0
  for _, p in ipairs(points) do
    local dx, dy = p[1] - mx, p[2] - my
    sxx = sxx + dx * dx
    sxy = sxy + dx * dy
    syy = syy + dy * dy
  end
  if sxx == 0 then
    fit.intercept, fit.slope = my, 0
    fit.verdict = ("no spread in %s: cannot tell scaling from a fixed cost"):format(quantity)
    return fit
  end
  fit.slope = sxy / sxx
  fit.intercept = my - fit.slope * mx
  fit.r2 = syy > 0 and (sxy * sxy) / (sxx * syy) or 1
  local share = my > 0 and (fit.slope * mx) / my or 0
  if fit.r2 >= 0.5 and share >= 0.2 then
    fit.verdict = ("scales with %s"):format(quantity)
  else
    fit.verdict = "fixed per dispatch"
  end
  return fit
end

--- Fits from the analysis (phaseprobe.analysis.analyze.scaling: Theil-Sen
-- fits and verdicts against every counted quantity) as the plain data the
-- page and plots take: { [label] = {intercept=, slope=, verdict=, note=,
-- quantity=, r2=, method=} }. With `by` (the user's --by), only fits
-- against that quantity are kept (and verdicts without one: fixed,
-- inconclusive), so the plots show what was asked.
function M.analysis_fits(set, by)
  local records = require "phaseprobe.records"
  local analyze = require "phaseprobe.analysis.analyze"
  if not records.is_set(set) then set = records.from_list(recview.collect(set, "html.analysis_fits")) end
  local s = analyze.scaling(set)
  local fits = {}
  for _, list in ipairs { s.phases or {}, s.nested or {} } do
    for _, v in ipairs(list) do
      local f = by and v.quantity ~= by and type(v.fits) == "table" and v.fits[by] or nil
      if f and f.ok and f.ts then
        -- asked for another quantity than the verdict's: its own fit, the
        -- verdict kept as it is
        fits[v.name] = { verdict = v.verdict .. (v.quantity and (" (plotted against " .. by .. ")") or ""),
          note = v.reason, quantity = by, intercept = f.ts.intercept, slope = f.ts.slope,
          r2 = f.ls and f.ls.r2, method = "Theil-Sen" }
      elseif not by or v.quantity == nil or v.quantity == by then
        fits[v.name] = { verdict = v.verdict, note = v.reason, quantity = v.quantity,
          intercept = v.fixed_ns, slope = v.ns_per_unit, r2 = v.r2, method = "Theil-Sen",
          legend = v.ns_per_unit == 0 and "fixed cost (median)" or nil }
      end
    end
  end
  return fits
end

------------------------------------------------------------------------------
-- describe
------------------------------------------------------------------------------

local function pick_group(records, want)
  if want then return want end
  local tags = {}
  for _, r in ipairs(records) do
    for _, t in ipairs(recview.tags(r)) do tags[t] = true end
  end
  if tags.shape then return "shape" end
  local names = {}
  for t in pairs(tags) do names[#names + 1] = t end
  table.sort(names)
  return names[1] or "nodes"
end

local function group_key(r, by)
  local v = r[by]
  if v == nil then return "(no " .. by .. ")" end
  if math.type(v) == "integer" then return recview.u64_text(v) end
  return tostring(v)
end

local function group_records(records, by)
  local groups, index = {}, {}
  for _, r in ipairs(records) do
    local k = group_key(r, by)
    local g = index[k]
    if not g then
      g = { name = k, records = {} }
      index[k] = g
      groups[#groups + 1] = g
    end
    g.records[#g.records + 1] = r
  end
  table.sort(groups, function(a, b)
    local na, nb = tonumber(a.name), tonumber(b.name)
    if na and nb then return na < nb end
    if na or nb then return na ~= nil end
    return a.name < b.name
  end)
  return groups
end

local function column(records, name)
  local out = {}
  for i, r in ipairs(records) do out[i] = recview.u(r, name) end
  return out
end

local function starvation_column(records)
  local out = {}
  for i, r in ipairs(records) do
    out[i] = math.max(0, recview.u(r, "device_window_ns") - recview.u(r, "kernel_ns"))
  end
  return out
end

local function group_rows(g, L, with_nested)
  local rows = {}
  local wall = stats(column(g.records, "wall_ns"))
  local function add(name, kind, values, parent)
    local s = stats(values)
    s.name, s.kind, s.parent = name, kind, parent
    if kind == "phase" or kind == "residue" or kind == "nested" or name == "named_host_ns" then
      s.share = wall.mean > 0 and s.mean / wall.mean or nil
    end
    rows[#rows + 1] = s
  end
  for _, p in ipairs(L.phases) do
    add(p, "phase", column(g.records, p))
    if with_nested then
      for _, n in ipairs(L.nested) do
        if L.parent[n] == p then add(n, "nested", column(g.records, n), p) end
      end
    end
  end
  if with_nested then
    for _, n in ipairs(L.nested) do
      if not L.parent[n] then add(n, "nested", column(g.records, n)) end
    end
  end
  add("unattributed_ns", "residue", column(g.records, "unattributed_ns"))
  add("named_host_ns", "total", column(g.records, "named_host_ns"))
  add("wall_ns", "total", column(g.records, "wall_ns"))
  add("device_window_ns", "device", column(g.records, "device_window_ns"))
  add("kernel_ns", "device", column(g.records, "kernel_ns"))
  add("starvation_ns", "device", starvation_column(g.records))
  return rows
end

local function group_label(by, name)
  if by == "nodes" or name:match("^%(no ") then return by .. " = " .. name end
  return name
end

-- The report as plain data: see the header for the shape.
function M.describe(set, opts)
  opts = opts or {}
  local records = recview.collect(set, "html.describe")
  local desc = {
    title = opts.title or "phaseprobe report",
    source = opts.source,
    notes = {},
    summary = {},
    groups = {},
    scatters = {},
  }
  if #records == 0 then
    desc.notes[#desc.notes + 1] = "No records: nothing to report."
    return desc
  end
  local L = recview.layout(records[1])
  local by = pick_group(records, opts.group)
  desc.group_by = by
  local groups = group_records(records, by)
  local with_nested = opts.nested ~= false

  desc.summary = {
    { "dispatches", #records },
    { "grouped by", by },
    { "groups", #groups },
    { "phases", #L.phases },
  }

  -- tables
  for _, g in ipairs(groups) do
    local counts = {}
    for _, c in ipairs(L.counts) do counts[#counts + 1] = { c, stats(column(g.records, c)).mean } end
    desc.groups[#desc.groups + 1] = { name = group_label(by, g.name), n = #g.records,
      rows = group_rows(g, L, with_nested), counts = counts }
  end

  -- stacked bars: the phase partition of the mean wall, the residue, then the
  -- device-side starvation kept apart
  local series = {}
  for i, p in ipairs(L.phases) do series[i] = { name = recview.phase_short(p), color = svg.color(i) } end
  series[#series + 1] = { name = "unattributed", color = svg.GREY }
  series[#series + 1] = { name = "starvation", hatch = true, gap_before = true,
    note = "device window - kernel, device time" }
  local bars = {}
  for gi, g in ipairs(groups) do
    local values = {}
    for _, row in ipairs(desc.groups[gi].rows) do
      if row.kind == "phase" then values[recview.phase_short(row.name)] = row.mean end
      if row.name == "unattributed_ns" then values.unattributed = row.mean end
      if row.name == "starvation_ns" then values.starvation = row.mean end
    end
    bars[gi] = { label = group_label(by, g.name), values = values, note = ("n=%d"):format(#g.records) }
  end
  desc.bars = { title = "Where the time of one dispatch goes (mean per group)",
    subtitle = "host phases and the unattributed residue add up to wall time (the printed total); "
      .. "the hatched part after the gap is device time",
    unit = "ns", value_label = "mean per dispatch", series = series, bars = bars }

  -- scatters: each phase against the quantity it scales with
  local plotted = {}
  for _, p in ipairs(L.phases) do plotted[#plotted + 1] = p end
  if with_nested then
    for _, n in ipairs(L.nested) do plotted[#plotted + 1] = n end
  end
  local fits = opts.fits or {}
  for _, label in ipairs(plotted) do
    local given = fits[label]
    local quantity = given and given.quantity or opts.by or "nodes"
    -- every dispatch goes into the fit; past max_points only every k-th is
    -- drawn, so a large log still makes a page a browser opens quickly
    local stride = math.max(1, math.ceil(#records / (opts.max_points or M.MAX_POINTS)))
    local series_pts, all, seen = {}, {}, 0
    for gi, g in ipairs(groups) do
      local pts = {}
      for _, r in ipairs(g.records) do
        local pt = { recview.u(r, quantity), recview.u(r, label) }
        seen = seen + 1
        if seen % stride == 0 or stride == 1 then pts[#pts + 1] = pt end
        all[#all + 1] = pt
      end
      series_pts[gi] = { name = group_label(by, g.name), points = pts }
    end
    local fit = given or M.fallback_fit(all, quantity)
    local subtitle = fit.verdict or ""
    if fit.slope and fit.intercept and fit.slope ~= 0 then
      subtitle = ("%s: %s × %s + %s%s"):format(subtitle, svg.fmt_ns(fit.slope), quantity,
        svg.fmt_ns(fit.intercept), fit.r2 and (", R² = %.3f"):format(fit.r2) or "")
    elseif fit.intercept and fit.slope == 0 then
      subtitle = ("%s: %s"):format(subtitle, svg.fmt_ns(fit.intercept))
    elseif fit.note then
      subtitle = ("%s (%s)"):format(subtitle, fit.note)
    end
    if fit.fallback then subtitle = subtitle .. " (fallback fit)" end
    if stride > 1 then subtitle = subtitle .. (" · 1 in %d dispatches drawn"):format(stride) end
    local nested_in = L.parent[label]
    desc.scatters[#desc.scatters + 1] = {
      label = label,
      verdict = fit.verdict,
      fallback = fit.fallback,
      svg = {
        title = label .. (nested_in and (" (inside " .. nested_in .. ")") or "") .. " against " .. quantity,
        subtitle = subtitle,
        x = { label = quantity },
        y = { label = label:gsub("_ns$", "") .. " time", unit = "ns" },
        series = series_pts,
        fit = fit,
      },
    }
  end

  if opts.fits then
    desc.notes[#desc.notes + 1] = "Fits and verdicts come from the analysis module (phaseprobe.analysis.analyze): "
      .. "each phase against every counted quantity; the plot shows the quantity of the verdict."
  else
    desc.notes[#desc.notes + 1] = "Fits here are the report's fallback: ordinary least squares of each "
      .. "phase's time on " .. (opts.by or "nodes") .. " over all dispatches; a phase \"scales\" when the line "
      .. "explains at least half the variance and its slope carries at least a fifth of the mean time."
  end
  desc.notes[#desc.notes + 1] = "Phases are a partition of the host time charged to a dispatch: they add "
    .. "up to named_host_ns, and unattributed_ns = wall_ns - named_host_ns is the rest. Nested regions "
    .. "(sub_*) are measured inside a phase and are not added again. Starvation is device_window_ns - "
    .. "kernel_ns: device time during which the stream waited for the host."
  return desc
end

------------------------------------------------------------------------------
-- render
------------------------------------------------------------------------------

local CSS = [[
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; margin: 24px 32px;
  color: #1d1d1d; max-width: 1100px; }
h1 { font-size: 24px; margin: 0 0 4px 0; }
h2 { font-size: 19px; margin: 32px 0 8px 0; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 22px 0 6px 0; }
p.src { color: #555; margin: 0 0 12px 0; font-family: "DejaVu Sans Mono", monospace; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 4px 0; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e6e6e6; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; font-weight: 600; }
td.name, th.name { text-align: left; font-family: "DejaVu Sans Mono", monospace; }
tr.nested td.name { padding-left: 28px; color: #555; }
tr.residue td { color: #6b6b6b; }
tr.total td { font-weight: 600; border-top: 1px solid #bbb; }
tr.device td { background: #fbf6f2; }
td.kind { text-align: left; color: #666; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border: 1px solid #777; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; font-size: 14px; }
dl.summary dt { color: #555; }
dl.summary dd { margin: 0; font-weight: 600; }
p.counts { font-size: 13px; color: #444; margin: 2px 0 10px 0; }
p.note { font-size: 13px; color: #444; max-width: 900px; }
figure { margin: 12px 0 18px 0; }
]]

local function td(s, class)
  return ("<td%s>%s</td>"):format(class and (' class="' .. class .. '"') or "", esc(s))
end

local KIND_TEXT = { phase = "phase", nested = "nested", residue = "residue", total = "total",
  device = "device" }

local function render_group(out, g, colors)
  out[#out + 1] = ("<h3>%s <small>(%d dispatches)</small></h3>"):format(esc(g.name), g.n)
  if g.counts and #g.counts > 0 then
    local parts = {}
    for _, c in ipairs(g.counts) do parts[#parts + 1] = ("%s %s"):format(esc(c[1]), esc(svg.fmt(c[2]))) end
    out[#out + 1] = '<p class="counts">mean counts: ' .. table.concat(parts, " &middot; ") .. "</p>"
  end
  out[#out + 1] = '<table><thead><tr><th class="name">field</th><th class="name">kind</th><th>mean</th>'
    .. "<th>median</th><th>min</th><th>max</th><th>share of wall</th></tr></thead><tbody>"
  for _, r in ipairs(g.rows) do
    local name = esc(r.name)
    local c = colors[r.name]
    if c then name = ('<span class="swatch" style="background:%s"></span>%s'):format(c, name) end
    local kind = KIND_TEXT[r.kind] or r.kind or ""
    if r.kind == "nested" and r.parent then kind = "inside " .. r.parent end
    out[#out + 1] = ('<tr class="%s"><td class="name">%s</td>%s%s%s%s%s%s</tr>'):format(
      esc(r.kind or ""), name, td(kind, "kind"), td(svg.fmt_ns(r.mean)), td(svg.fmt_ns(r.median)),
      td(svg.fmt_ns(r.min)), td(svg.fmt_ns(r.max)),
      td(r.share and string.format("%.1f%%", 100 * r.share) or ""))
  end
  out[#out + 1] = "</tbody></table>"
end

function M.render(desc)
  if type(desc) ~= "table" then error("html.render: expected a report description table", 2) end
  local out = {}
  out[#out + 1] = "<!DOCTYPE html>"
  out[#out + 1] = '<html lang="en"><head><meta charset="utf-8">'
  out[#out + 1] = '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    .. 'style-src \'unsafe-inline\'; img-src data:">'
  out[#out + 1] = "<title>" .. esc(desc.title or "phaseprobe report") .. "</title>"
  out[#out + 1] = "<style>" .. CSS .. "</style></head><body>"
  out[#out + 1] = "<h1>" .. esc(desc.title or "phaseprobe report") .. "</h1>"
  if desc.source then out[#out + 1] = '<p class="src">' .. esc(desc.source) .. "</p>" end
  if desc.summary and #desc.summary > 0 then
    out[#out + 1] = '<dl class="summary">'
    for _, kv in ipairs(desc.summary) do
      out[#out + 1] = ("<dt>%s</dt><dd>%s</dd>"):format(esc(kv[1]), esc(kv[2]))
    end
    out[#out + 1] = "</dl>"
  end

  local colors = {}
  if desc.bars then
    for _, s in ipairs(desc.bars.series or {}) do
      if s.color and not s.hatch then colors[s.name .. "_ns"] = s.color end
    end
    out[#out + 1] = "<h2>Where the time goes</h2><figure>" .. svg.stacked_bars(desc.bars) .. "</figure>"
  end

  if desc.groups and #desc.groups > 0 then
    out[#out + 1] = "<h2>Decomposition" .. (desc.group_by and (" by " .. esc(desc.group_by)) or "") .. "</h2>"
    for _, g in ipairs(desc.groups) do render_group(out, g, colors) end
  end

  if desc.scatters and #desc.scatters > 0 then
    out[#out + 1] = "<h2>What each phase scales with</h2>"
    for _, s in ipairs(desc.scatters) do
      out[#out + 1] = ('<figure id="%s">'):format(esc(s.label)) .. svg.scatter(s.svg) .. "</figure>"
    end
  end

  for _, n in ipairs(desc.notes or {}) do out[#out + 1] = '<p class="note">' .. esc(n) .. "</p>" end
  out[#out + 1] = "</body></html>"
  return table.concat(out, "\n") .. "\n"
end

function M.report(set, opts)
  return M.render(M.describe(set, opts))
end

function M.write(set, path, opts)
  local page = M.report(set, opts)
  local f, err = io.open(path, "wb")
  if not f then return nil, ("html: cannot write '%s': %s"):format(path, err) end
  local ok, werr = f:write(page)
  f:close()
  if not ok then return nil, ("html: writing '%s' failed: %s"):format(path, werr) end
  return true
end

return M
