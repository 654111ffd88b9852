-- phaseprobe.output.html: one self-contained HTML report (no scripts, no network:
-- the page's own Content-Security-Policy forbids both).
--
--   html.describe(set, opts) -> desc      the report as plain data
--   html.render(desc)        -> string    the page for a description
--   html.report(set, opts)   -> string    render(describe(set, opts))
--   html.write(set, path, opts) -> true | nil, message   ("-": standard output)
--
-- `set` is a record set (phaseprobe.records; records.from_list makes one
-- from a list). opts: title=, source= (shown under the title), group= (tag or
-- field to group by; default the `shape` tag, else the first tag, else
-- `nodes`), by= (the quantity phases are plotted against when no verdict
-- names one; default `nodes`), fits = { [phase label] = {intercept=,
-- slope=, verdict=, quantity=, r2=} } (default html.analysis_fits(set, by):
-- the analysis's verdicts), nested = false to leave nested regions out,
-- max_points = points drawn per scatter before they are binned (default
-- output/points.lua's), plots = the labels of the phases and nested
-- regions to plot (default all; {} for none), progress = function(what, {total=, unit=}) -> an
-- object with update(done, extra, label) and done() (a command's
-- ctx.progress): each step of the page (the tables, the fits, the plots,
-- the warnings) says how far it is through it.
--
-- Sits at the end of the flow: record sets -> analysis (verdicts) -> this
-- page; its tables are the C summaries of each group, its scatters come
-- from output/points.lua (every record looked at once, binned past
-- max_points, outliers kept), its plots from output/svg.lua.
--
-- Numbers are those of the text reports (output/report.lua: times in SI
-- units with 3 significant digits, counts with thousands separators), with
-- "µs" for microseconds as on the plots' axes.
--
-- The description (what render takes) is:
--   { title=, source=, warnings = {string}, notes = {string}, summary = {{label, value}},
--     group_by=, groups = { {name=, n=, rows = {row}, counts = {{name, mean}}} },
--     bars = <svg.stacked_bars options>, scatters = { {label=, svg=<svg.scatter options>} } }
--   row = { name=, kind = "phase"|"nested"|"residue"|"total"|"device", parent=,
--           mean=, median=, min=, max=, share= (of mean wall, 0..1, or nil) }
-- warnings are said near the top of the page: tags that split the records
-- into variants (analysis.analyze.variants), records whose named phases
-- exceed their wall (analysis.analyze.overrun); findings = {variants=,
-- overrun=} holds what the analysis found, for other outputs to say.
local record = require "phaseprobe.record"
local records = require "phaseprobe.records"
local svg = require "phaseprobe.output.svg"
local points = require "phaseprobe.output.points"

local M = {}
local esc = svg.esc

------------------------------------------------------------------------------
-- verdicts
------------------------------------------------------------------------------

--- Fits from the analysis (phaseprobe.analysis.analyze.scaling: Theil-Sen
-- fits and verdicts against every counted quantity) as the plain data the
-- page and plots take: { [label] = {intercept=, slope=, verdict=, note=,
-- quantity=, r2=, method=} }. With `by` (the user's --by), only fits
-- against that quantity are kept (and verdicts without one: fixed,
-- inconclusive), so the plots show what was asked. opts.progress: as
-- describe's.
function M.analysis_fits(set, by, opts)
  local analyze = require "phaseprobe.analysis.analyze"
  local s = analyze.scaling(set, opts and { progress = opts.progress } or nil)
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

local function pick_group(set, want)
  if want then return want end
  local tags = {}
  local cols = set:columns()
  for _, f in ipairs(set:fields()) do
    if f ~= "kernel_src" and cols:kind(f) == "string" then tags[#tags + 1] = f end
  end
  for _, t in ipairs(tags) do
    if t == "shape" then return t end
  end
  table.sort(tags)
  return tags[1] or "nodes"
end

-- A group's name: its key as the records' lines print it (a u64 past
-- 2^63-1 is a float in Lua: its digits come from the text).
local function key_text(g, by)
  if g.missing then return "(no " .. by .. ")" end
  if math.type(g.key) == "integer" then return string.format("%d", g.key) end
  if math.type(g.key) == "float" then return g.set[1]:_text(by) end
  return tostring(g.key)
end

local function group_sets(set, by)
  local groups = {}
  if set:has(by) then
    for _, g in ipairs(set:group(by)) do
      groups[#groups + 1] = { name = key_text(g, by), set = g.set, n = g.n }
    end
  else
    groups[1] = { name = "(no " .. by .. ")", set = set, n = set:count() }
  end
  table.sort(groups, function(a, b)
    local na, nb = tonumber(a.name), tonumber(b.name)
    if na and nb then return na < nb end
    if na or nb then return na ~= nil end
    return a.name < b.name
  end)
  return groups
end

local ZERO = { mean = 0, median = 0, min = 0, max = 0 }

-- mean, median, min, max of a field over a group (the C summary; a field
-- the group lacks reads as 0, as the line would print it); step: the
-- progress of the tables, told of each field
local function stats(set, name, step, group)
  if step then step:begin(group .. ", " .. name) end
  local s = set:has(name) and set:summary(name)
  if not s or s.count == 0 then return ZERO end
  return { mean = s.mean, median = s.median, min = s.min, max = s.max }
end

local function starvation(set, step, group)
  if step then step:begin(group .. ", starvation_ns") end
  if not (set:has("device_window_ns") and set:has("kernel_ns")) then return ZERO end
  local s = set:lincomb({ { "device_window_ns", 1 }, { "kernel_ns", -1 } }, 0)
  if s.count == 0 then return ZERO end
  return { mean = s.mean, median = s.median, min = s.min, max = s.max }
end

-- The fields group_rows summarises (for the progress of the tables).
local function row_count(L, with_nested)
  return #L.phases + (with_nested and #L.nested or 0) + 6
end

local function group_rows(g, L, with_nested, step)
  local rows = {}
  local function stats_of(name) return stats(g.set, name, step, g.name) end
  local wall = stats_of("wall_ns")
  local function add(name, kind, st, parent)
    local row = { name = name, kind = kind, parent = parent, mean = st.mean, median = st.median,
      min = st.min, max = st.max }
    if kind == "phase" or kind == "residue" or kind == "nested" or name == "named_host_ns" then
      row.share = wall.mean > 0 and st.mean / wall.mean or nil
    end
    rows[#rows + 1] = row
  end
  for _, p in ipairs(L.phases) do
    add(p, "phase", stats_of(p))
    if with_nested then
      for _, n in ipairs(L.nested) do
        if L.parent[n] == p then add(n, "nested", stats_of(n), p) end
      end
    end
  end
  if with_nested then
    for _, n in ipairs(L.nested) do
      if not L.parent[n] then add(n, "nested", stats_of(n)) end
    end
  end
  add("unattributed_ns", "residue", stats_of("unattributed_ns"))
  add("named_host_ns", "total", stats_of("named_host_ns"))
  add("wall_ns", "total", wall)
  add("device_window_ns", "device", stats_of("device_window_ns"))
  add("kernel_ns", "device", stats_of("kernel_ns"))
  add("starvation_ns", "device", starvation(g.set, step, g.name))
  return rows
end

local function group_label(by, name)
  if by == "nodes" or name:match("^%(no ") then return by .. " = " .. name end
  return name
end

local function as_set(set)
  if records.is_set(set) then return set end
  error("html.describe: expected a record set (phaseprobe.records; records.from_list makes one), got "
    .. type(set), 3)
end

local describe

-- The report as plain data: see the header for the shape.
function M.describe(set, opts)
  set = as_set(set)
  -- microseconds as the axes write them, for this page only
  local report = require "phaseprobe.output.report"
  local micro = report.micro
  report.micro = "µs"
  local ok, desc = pcall(describe, set, opts or {})
  report.micro = micro
  if not ok then error(desc, 0) end
  return desc
end

function describe(set, opts)
  local desc = {
    title = opts.title or "phaseprobe report",
    source = opts.source,
    warnings = {},
    notes = {},
    summary = {},
    groups = {},
    scatters = {},
  }
  local n = set:count()
  if n == 0 then
    desc.notes[#desc.notes + 1] = "No records: nothing to report."
    return desc
  end
  local L = set:layout()
  local by = pick_group(set, opts.group)
  desc.group_by = by
  local groups = group_sets(set, by)
  local with_nested = opts.nested ~= false
  local report = require "phaseprobe.output.report"

  desc.summary = {
    { "dispatches", report.num(n) },
    { "grouped by", by },
    { "groups", report.num(#groups) },
    { "phases", report.num(#L.phases) },
  }

  -- tables
  local analyze = require "phaseprobe.analysis.analyze"
  local step = analyze.step(opts, "summarising the groups",
    #groups * (#L.counts + row_count(L, with_nested)), "fields")
  for _, g in ipairs(groups) do
    local counts = {}
    for _, c in ipairs(L.counts) do counts[#counts + 1] = { c, stats(g.set, c, step, g.name).mean } end
    desc.groups[#desc.groups + 1] = { name = group_label(by, g.name), n = g.n,
      rows = group_rows(g, L, with_nested, step), counts = counts }
  end
  step:finish()

  -- stacked bars: the phase partition of the mean wall, the residue, then the
  -- device-side starvation kept apart
  local series = {}
  for i, p in ipairs(L.phases) do series[i] = { name = record.short(p), color = svg.color(i) } end
  series[#series + 1] = { name = "unattributed", color = svg.GREY }
  series[#series + 1] = { name = "starvation", hatch = true, gap_before = true,
    note = "device window - kernel, device time" }
  local bars = {}
  for gi, g in ipairs(groups) do
    local values = {}
    for _, row in ipairs(desc.groups[gi].rows) do
      if row.kind == "phase" then values[record.short(row.name)] = row.mean end
      if row.name == "unattributed_ns" then values.unattributed = row.mean end
      if row.name == "starvation_ns" then values.starvation = row.mean end
    end
    bars[gi] = { label = group_label(by, g.name), values = values, note = "n=" .. report.num(g.n) }
  end
  desc.bars = { title = "Where the time of one dispatch goes (mean per group)",
    subtitle = "host phases and the unattributed residue add up to wall time (the printed total); "
      .. "the hatched part after the gap is device time",
    unit = "ns", value_label = "mean per dispatch", series = series, bars = bars }

  -- scatters: each phase against the quantity it scales with; every record
  -- is looked at, large sets through a grid (output/points.lua)
  -- (opts.plots: only these, as phaseprobe plot asks for one, or none)
  local plotted, wanted = {}, nil
  if opts.plots then
    wanted = {}
    for _, p in ipairs(opts.plots) do wanted[p] = true end
  end
  for _, p in ipairs(L.phases) do
    if not wanted or wanted[p] then plotted[#plotted + 1] = p end
  end
  if with_nested then
    for _, nl in ipairs(L.nested) do
      if not wanted or wanted[nl] then plotted[#plotted + 1] = nl end
    end
  end
  local fits = opts.fits or (#plotted > 0 and M.analysis_fits(set, opts.by, opts)) or {}
  local named = {}
  for gi, g in ipairs(groups) do named[gi] = { name = group_label(by, g.name), set = g.set } end
  step = analyze.step(opts, "drawing the plots", #plotted, "plots")
  for _, label in ipairs(plotted) do
    step:begin(label)
    local fit = fits[label]
    local quantity = fit and fit.quantity or opts.by or "nodes"
    local pts = points.gather(named, quantity, label, { max_points = opts.max_points })
    fit = fit or { verdict = "no fit against " .. quantity }
    local subtitle = fit.verdict or ""
    if fit.slope and fit.intercept and fit.slope ~= 0 then
      subtitle = ("%s: %s%s"):format(subtitle, report.equation(fit.intercept, fit.slope, quantity),
        fit.r2 and (", least squares R² %s"):format(report.q(fit.r2)) or "")
    elseif fit.intercept and fit.slope == 0 then
      subtitle = ("%s: %s"):format(subtitle, report.ns(fit.intercept))
    elseif fit.note then
      subtitle = ("%s (%s)"):format(subtitle, fit.note)
    end
    local note
    if pts.binned then
      note = ("%s; each dot stands for those in one small cell of the plot (at their "
        .. "mean, larger for more)"):format(report.count(pts.n, "dispatch"))
    end
    if pts.outliers > 0 then
      note = (note and (note .. ". ") or "") .. ("%s above %s drawn above the axis break, up to %s%s")
        :format(report.num(pts.outliers), report.ns(pts.y.bulk), report.ns(pts.y.max),
          pts.outliers_drawn < pts.outliers and (" (the largest %s one by one)"):format(
            report.num(pts.outliers_drawn)) or " (one by one)")
    end
    local nested_in = L.parent[label]
    local svg_series = {}
    for gi, sr in ipairs(pts.series) do
      svg_series[gi] = { name = sr.name, points = sr.points, outliers = sr.outliers }
    end
    desc.scatters[#desc.scatters + 1] = {
      label = label,
      verdict = fit.verdict,
      svg = {
        title = label .. (nested_in and (" (inside " .. nested_in .. ")") or "") .. " against " .. quantity,
        subtitle = subtitle,
        note = note,
        x = { label = quantity },
        y = { label = label:gsub("_ns$", "") .. " time", unit = "ns", bulk = pts.y.bulk < pts.y.max
          and pts.y.bulk or nil, max = pts.y.max },
        series = svg_series,
        fit = fit.slope and fit.intercept and fit or nil,
      },
    }
  end
  step:finish()

  desc.notes[#desc.notes + 1] = "Fits and verdicts come from the analysis (phaseprobe.analysis.fit): "
    .. "each phase against every counted quantity, Theil-Sen; the plot shows the quantity of the verdict."
  local aopts = { progress = opts.progress }
  desc.findings = { variants = analyze.variants(set, aopts),
    overrun = analyze.overrun(set, nil, aopts) }
  for _, v in ipairs(desc.findings.variants) do
    desc.warnings[#desc.warnings + 1] = (report.variants({ v }):gsub("\n", " "))
  end
  local over = report.overrun(desc.findings.overrun)
  if over then desc.warnings[#desc.warnings + 1] = (over:gsub("\n", " ")) end
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
span.nowrap { white-space: nowrap; }
p.warning { font-size: 14px; color: #7a1616; background: #fdf1f0; border-left: 4px solid #c0392b;
  padding: 6px 10px; max-width: 1000px; }
figure { margin: 12px 0 18px 0; }
h1, h3, p.src, dl.summary dd, p.note, p.warning { overflow-wrap: anywhere; }
]]

local function td(s, class)
  return ("<td%s>%s</td>"):format(class and (' class="' .. class .. '"') or "", esc(s))
end

local KIND_TEXT = { phase = "phase", nested = "nested", residue = "residue", total = "total",
  device = "device" }

local function render_group(out, g, colors)
  out[#out + 1] = ("<h3>%s <small>(%s %s)</small></h3>"):format(esc(g.name), esc(svg.fmt(g.n)),
    g.n == 1 and "dispatch" or "dispatches")
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
      td(r.share and require("phaseprobe.output.report").pct(r.share) or ""))
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
  -- (an option and its value, "--where knob=base", are kept on one line)
  for _, w in ipairs(desc.warnings or {}) do
    out[#out + 1] = '<p class="warning">' .. esc(w):gsub("%-%-[%w%-]+ [^%s;,()]+",
      '<span class="nowrap">%0</span>') .. "</p>"
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

-- (the path: files.check_path's rule, "-" for standard output; the
-- messages those of the exporters, "html.write: cannot write 'x': ...")
function M.write(set, path, opts)
  local files = require "phaseprobe.output.files"
  files.check_path(path, "html.write", "output", 2)
  local page = M.report(set, opts)
  local w, err = files.open_out(path, "html.write")
  if not w then return nil, err end
  w.write(page)
  return w.close()
end

return M
