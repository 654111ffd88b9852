-- phaseprobe.output.svg: the two plots the report needs, as SVG text.
--
--   svg.scatter{ title=, subtitle=, warnings = {string}, x = {label=, unit=}, y = {label=, unit=},
--                series = { {name=, points = {{x, y}, ...}}, ... } | points = {...},
--                fit = {intercept=, slope=, verdict=, quantity=, r2=, method=, legend=},
--                width=, height= }
--   svg.stacked_bars{ title=, subtitle=, warnings = {string}, unit=, value_label=,
--                     series = { {name=, color=, hatch=, gap_before=, note=}, ... },
--                     bars = { {label=, values = {name = v}, note=}, ... }, width= }
--
-- Both return a complete <svg> element (standalone-valid: it carries its
-- namespace) that can be written to a .svg file or inlined in HTML. A unit of
-- "ns" makes the axis pick ns, µs, ms or s from the data and say which.
-- warnings: lines said in dark red under the subtitle, wrapped to the width.
-- Numbers are those of the text reports (output/report.lua), with "µs".
--
-- Where it sits: output/html.lua describes the plots from record sets and
-- the analysis; this module only draws them.
local M = {}

local FONT = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"

-- Distinct, print-safe colours; grey is kept for the residue.
M.PALETTE = { "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
  "#ff9da7", "#9c755f", "#2f4b7c", "#a05195", "#d45087", "#665191", "#ffa600", "#003f5c",
  "#7a5195" }
M.GREY = "#b8b0ac"
M.DARK = "#7f2704"
M.WARN = "#9b1c1c"

function M.color(i) return M.PALETTE[(i - 1) % #M.PALETTE + 1] end

local uid = 0
local function next_id(kind)
  uid = uid + 1
  return ("pp%s%d"):format(kind, uid)
end

function M.esc(s)
  return (tostring(s):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
    ['"'] = "&quot;", ["'"] = "&#39;" }))
end
local esc = M.esc

local function num(v)
  -- coordinates with two decimals at most
  local s = string.format("%.2f", v):gsub("%.?0+$", "")
  if s == "-0" then s = "0" end
  return s
end

------------------------------------------------------------------------------
-- units and ticks
------------------------------------------------------------------------------

local TIME_UNITS = { { "s", 1e9 }, { "ms", 1e6 }, { "µs", 1e3 }, { "ns", 1 } }

-- The display unit for values up to `max`: { name, scale }.
function M.unit_for(unit, max)
  if unit == "ns" then
    for _, u in ipairs(TIME_UNITS) do
      if max >= u[2] then return { name = u[1], scale = u[2] } end
    end
    return { name = "ns", scale = 1 }
  end
  return { name = unit, scale = 1 }
end

-- Numbers as the text reports write them (output/report.lua: 3 significant
-- digits, thousands separated), whatever --raw says.
local function report() return require "phaseprobe.output.report" end

-- A number for people: "0.25", "17.5", "2,500", "10,000".
function M.fmt(v)
  if type(v) == "number" and v ~= v then return "n/a" end
  return report().plain(v)
end

-- A duration in nanoseconds for people: "850 ns", "12.3 µs", "4.56 ms".
function M.fmt_ns(ns)
  return report().si(ns, "µs")
end

-- Evenly spaced round ticks covering [lo, hi]: step 1, 2, 2.5 or 5 x 10^k.
function M.ticks(lo, hi, want)
  want = want or 5
  if hi <= lo then hi = lo + 1 end
  local raw = (hi - lo) / want
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local step = mag
  for _, m in ipairs { 1, 2, 2.5, 5, 10 } do
    step = m * mag
    if step >= raw then break end
  end
  local first = math.floor(lo / step + 1e-9) * step
  local last = math.ceil(hi / step - 1e-9) * step
  local out = {}
  local v = first
  while v <= last + step * 1e-9 do
    out[#out + 1] = math.abs(v) < step * 1e-9 and 0 or v
    v = first + #out * step
  end
  return out, first, last, step
end

local function text(x, y, s, attrs)
  return ('<text x="%s" y="%s"%s>%s</text>'):format(num(x), num(y), attrs and (" " .. attrs) or "", esc(s))
end

local function open_svg(w, h, title)
  return {
    ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
      .. 'font-family="%s" font-size="13" role="img" aria-label="%s">'):format(w, h, w, h, FONT, esc(title or "")),
    ('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>'):format(w, h),
  }
end

local function axis_label(label, u)
  if u and u.name and u.name ~= "" then return ("%s (%s)"):format(label, u.name) end
  return label
end

------------------------------------------------------------------------------
-- text that fits
------------------------------------------------------------------------------

-- Width of text in px at a font size (DejaVu Sans is wide: 0.6 em per
-- character on average, bold 0.66); an estimate on the safe side, so
-- nothing reaches the edge.
function M.text_width(s, size, bold)
  return (utf8.len(s) or #s) * size * (bold and 0.66 or 0.6)
end

-- A list of words in lines no wider than w px (a word wider than w has a
-- line of its own).
local function fill(words, w, size, bold)
  local lines, line = {}, nil
  for _, word in ipairs(words) do
    local try = line and (line .. " " .. word) or word
    if line and M.text_width(try, size, bold) > w then
      lines[#lines + 1] = line
      line = word
    else
      line = try
    end
  end
  if line then lines[#lines + 1] = line end
  return lines
end

-- Words of s in lines no wider than w px.
function M.wrap(s, w, size, bold)
  local words = {}
  for word in tostring(s):gmatch("%S+") do words[#words + 1] = word end
  return fill(words, w, size, bold)
end

-- Lines of s no wider than w px, a word too wide for one cut after a '+',
-- '/', ',' or '=' (else a '_' or '-') where it can be (a label such as
-- "memo_digest+cache_scan+skip_gate" is wrapped, never cut short).
function M.wrap_label(s, w, size, bold)
  local words = {}
  for word in tostring(s):gmatch("%S+") do
    while M.text_width(word, size, bold) > w do
      local n = math.max(1, math.floor(w / (size * (bold and 0.66 or 0.6))))
      local head = word:sub(1, utf8.offset(word, n + 1) and (utf8.offset(word, n + 1) - 1) or #word)
      -- after a '+', '/', ',' or '=' first, else after '_' or '-'
      local at = head:match("^.*()[+/,=]")
      if not (at and at > #head // 3) then at = head:match("^.*()[_%-]") end
      local cut = (at and at > #head // 3) and at or #head
      words[#words + 1] = word:sub(1, cut)
      word = word:sub(cut + 1)
    end
    if word ~= "" then words[#words + 1] = word end
  end
  return fill(words, w, size, bold)
end

-- Legend items laid out in rows within w px: each item {label=} gets
-- lines (its label wrapped to w - mark px, never cut), x (from 0) and y
-- (from the first row's line, px); items of one line share a row while
-- they fit, an item of several lines has rows of its own. Returns the
-- height the legend takes. mark: the room before a label (its swatch),
-- gap: after it, min: an item's least width, line: px per line, row: px
-- from one row to the next.
function M.legend_layout(items, w, o)
  local mark, gap, min_w = o.mark, o.gap or 18, o.min or 0
  local line, row = o.line or 16, o.row or 20
  local x, y, used = 0, 0, false
  for _, it in ipairs(items) do
    it.lines = M.wrap_label(it.label, w - mark, 12)
    local iw = math.max(mark + M.text_width(it.lines[1] or "", 12) + gap, min_w)
    if #it.lines > 1 or (used and x + iw > w) then
      if used then y, x = y + row, 0 end
    end
    it.x, it.y = x, y
    if #it.lines > 1 then
      -- a row of its own: the next item starts under its last line
      y = y + line * (#it.lines - 1) + row
      x, used = 0, false
    else
      x, used = x + iw, true
    end
  end
  return y + (used and row or 0)
end

------------------------------------------------------------------------------
-- scatter
------------------------------------------------------------------------------

local function check_points(pts, where)
  if type(pts) ~= "table" then error(where .. ": points must be a list of {x, y}", 4) end
  for i, p in ipairs(pts) do
    if type(p) ~= "table" or type(p[1]) ~= "number" or type(p[2]) ~= "number" then
      error(("%s: point %d must be {x, y} with numbers"):format(where, i), 4)
    end
  end
end

--- A scatter plot. series = { {name=, points = { {x, y [, n]} }, outliers
-- = { {x, y [, seq]} }, color=} } (or points = ... for one series); a point
-- with n > 1 stands for n records (drawn larger). y.bulk: the axis ends
-- there and points above it (the outliers) are drawn one by one in a band
-- above a break of the axis, up to y.max. fit = {intercept=, slope=, ...}
-- draws the fitted line where it is at or above zero. note: a line under
-- the legend.
function M.scatter(o)
  if type(o) ~= "table" then error("svg.scatter: expected a table of options", 2) end
  local series = o.series or { { name = o.name, points = o.points or {} } }
  for i, s in ipairs(series) do
    check_points(s.points, ("svg.scatter: series %d"):format(i))
    if s.outliers then check_points(s.outliers, ("svg.scatter: series %d outliers"):format(i)) end
  end
  local xo, yo = o.x or {}, o.y or {}
  local W = o.width or 760
  local ml, mr = 84, 28
  local pw = W - ml - mr
  local fit = o.fit

  -- ranges: both axes start at zero so a fixed cost shows as an intercept
  local xmax, ymax, nout = 0, 0, 0
  for _, s in ipairs(series) do
    for _, p in ipairs(s.points) do
      if p[1] > xmax then xmax = p[1] end
      if p[2] > ymax then ymax = p[2] end
    end
    for _, p in ipairs(s.outliers or {}) do
      if p[1] > xmax then xmax = p[1] end
      if p[2] > ymax then ymax = p[2] end
      nout = nout + 1
    end
  end
  if yo.max and yo.max > ymax then ymax = yo.max end
  local bulk = yo.bulk and yo.bulk < ymax and yo.bulk or nil
  local main_max = bulk or ymax
  if fit and fit.slope and fit.intercept and not bulk then
    main_max = math.max(main_max, fit.intercept + fit.slope * xmax, fit.intercept)
  end
  local xu = M.unit_for(xo.unit, xmax)
  local yu = M.unit_for(yo.unit, main_max)
  local xt, _, xhi = M.ticks(0, xmax > 0 and xmax / xu.scale or 1, 6)
  local yt, _, yhi = M.ticks(0, main_max > 0 and main_max / yu.scale or 1, 5)

  -- head: title and subtitle, wrapped to the width
  local head = {}
  local y = 22
  for _, l in ipairs(o.title and M.wrap(o.title, W - ml - 12, 16, true) or {}) do
    head[#head + 1] = text(ml, y, l, 'font-size="16" font-weight="bold"')
    y = y + 20
  end
  for _, l in ipairs(o.subtitle and M.wrap(o.subtitle, W - ml - 12, 13) or {}) do
    head[#head + 1] = text(ml, y, l, 'font-size="13" fill="#333"')
    y = y + 17
  end
  for _, w in ipairs(o.warnings or {}) do
    for _, l in ipairs(M.wrap(w, W - ml - 12, 12)) do
      head[#head + 1] = text(ml, y, l, 'font-size="12" fill="' .. M.WARN .. '"')
      y = y + 16
    end
  end
  local top = y + 6
  local band_h, gap = bulk and 64 or 0, bulk and 14 or 0
  local ph = o.height and (o.height - top - 60) or 330
  local main_top = top + band_h + gap
  local function X(v) return ml + (v / xu.scale) / xhi * pw end
  local function Y(v)
    if bulk and v > bulk then
      return top + band_h - (v - bulk) / math.max(ymax - bulk, 1) * (band_h - 8)
    end
    return main_top + ph - (v / yu.scale) / yhi * ph
  end
  local axis_y = main_top + ph

  -- legend rows under the axis label
  local items = {}
  for si, s in ipairs(series) do
    if s.name then items[#items + 1] = { kind = "dot", color = s.color or M.color(si), label = s.name } end
  end
  if fit and fit.slope and fit.intercept then
    items[#items + 1] = { kind = "line", label = fit.legend or ((fit.method or "least-squares") .. " fit") }
  end
  if nout > 0 then
    items[#items + 1] = { kind = "outlier", label = "outlier above the break, one dispatch" }
  end
  -- (a long label, a tag's value or a file's path, is wrapped, never cut)
  local legend_h = M.legend_layout(items, pw, { mark = 22, gap = 22 })
  for _, it in ipairs(items) do it.x = ml + it.x end
  local legend_top = axis_y + 58
  local notes = o.note and M.wrap(o.note, pw, 12) or {}
  local H = legend_top + legend_h + #notes * 16 + 10

  local out = open_svg(W, H, o.title)
  local clip = next_id("clip")
  out[#out + 1] = ('<defs><clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath></defs>')
      :format(clip, num(ml), num(main_top), num(pw), num(ph))
  for _, h in ipairs(head) do out[#out + 1] = h end

  -- grid and ticks
  out[#out + 1] = '<g stroke="#e3e3e3" stroke-width="1">'
  for _, v in ipairs(yt) do
    local yy = main_top + ph - v / yhi * ph
    out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s"/>'):format(num(ml), num(yy), num(ml + pw), num(yy))
  end
  for _, v in ipairs(xt) do
    local x = ml + v / xhi * pw
    out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s"/>'):format(num(x), num(main_top), num(x), num(axis_y))
  end
  out[#out + 1] = "</g>"
  out[#out + 1] = ('<g stroke="#333" stroke-width="1.2"><line x1="%s" y1="%s" x2="%s" y2="%s"/>'
    .. '<line x1="%s" y1="%s" x2="%s" y2="%s"/></g>'):format(num(ml), num(axis_y), num(ml + pw), num(axis_y),
    num(ml), num(main_top), num(ml), num(axis_y))
  out[#out + 1] = '<g font-size="12" fill="#333">'
  for _, v in ipairs(yt) do
    out[#out + 1] = text(ml - 8, main_top + ph - v / yhi * ph + 4, M.fmt(v), 'text-anchor="end"')
  end
  for _, v in ipairs(xt) do
    out[#out + 1] = text(ml + v / xhi * pw, axis_y + 18, M.fmt(v), 'text-anchor="middle"')
  end
  out[#out + 1] = "</g>"
  if bulk then
    -- the band above the break: its own scale, from the bulk's end to the largest
    local fmt_v = yo.unit == "ns" and M.fmt_ns or M.fmt
    out[#out + 1] = ('<rect x="%s" y="%s" width="%s" height="%s" fill="#fbf3f0" stroke="#d9c2b8"/>')
      :format(num(ml), num(top), num(pw), num(band_h))
    out[#out + 1] = text(ml - 8, top + 12, fmt_v(ymax), 'text-anchor="end" font-size="11" fill="#7f2704"')
    out[#out + 1] = text(ml - 8, top + band_h - 2, fmt_v(bulk), 'text-anchor="end" font-size="11" fill="#7f2704"')
    -- the break marks on the y axis
    local by = main_top - gap / 2
    out[#out + 1] = ('<g stroke="#333" stroke-width="1.2"><line x1="%s" y1="%s" x2="%s" y2="%s"/>'
      .. '<line x1="%s" y1="%s" x2="%s" y2="%s"/></g>'):format(num(ml - 6), num(by + 2), num(ml + 6),
      num(by - 4), num(ml - 6), num(by + 6), num(ml + 6), num(by))
  end
  out[#out + 1] = text(ml + pw / 2, axis_y + 38, axis_label(xo.label or "x", xu), 'text-anchor="middle" font-size="13"')
  out[#out + 1] = ('<text transform="translate(%s %s) rotate(-90)" text-anchor="middle" font-size="13">%s</text>')
      :format(num(20), num(main_top + ph / 2), esc(axis_label(yo.label or "y", yu)))

  -- fitted line, where it is at or above zero, clipped to the plot area
  if fit and fit.slope and fit.intercept then
    local x1 = xhi * xu.scale
    local x0 = 0
    if fit.intercept < 0 and fit.slope > 0 then x0 = math.min(-fit.intercept / fit.slope, x1) end
    if fit.intercept + fit.slope * x1 < 0 and fit.slope < 0 then x1 = math.max(fit.intercept / -fit.slope, x0) end
    if fit.intercept + fit.slope * x0 >= 0 or fit.intercept + fit.slope * x1 >= 0 then
      out[#out + 1] = ('<line clip-path="url(#%s)" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#222" '
        .. 'stroke-width="2" stroke-dasharray="7 4"><title>%s</title></line>'):format(clip, num(X(x0)),
        num(Y(math.max(0, fit.intercept + fit.slope * x0))), num(X(x1)),
        num(Y(math.max(0, fit.intercept + fit.slope * x1))), esc(fit.verdict or "fit"))
    end
  end

  -- points: one dot per point; a point standing for n records is larger
  local function value_text(v, u) return M.fmt(v / u.scale) .. " " .. (u.name or "") end
  for si, s in ipairs(series) do
    local color = s.color or M.color(si)
    out[#out + 1] = ('<g fill="%s" fill-opacity="0.7" stroke="%s" stroke-width="1">'):format(color, color)
    for _, p in ipairs(s.points) do
      local n = p[3] or 1
      local r = n > 1 and math.min(6.5, 2.5 + 1.3 * math.log(n, 10)) or 3.5
      out[#out + 1] = ('<circle cx="%s" cy="%s" r="%s"><title>%s: %s, %s%s</title></circle>'):format(
        num(X(p[1])), num(Y(p[2])), num(r), esc(s.name or "point"), esc(value_text(p[1], xu)),
        esc(value_text(p[2], yu)), n > 1 and esc((" (%s dispatches, mean)"):format(M.fmt(n))) or "")
    end
    out[#out + 1] = "</g>"
    if s.outliers and #s.outliers > 0 then
      out[#out + 1] = ('<g fill="%s" stroke="#111" stroke-width="1.6">'):format(color)
      for _, p in ipairs(s.outliers) do
        out[#out + 1] = ('<circle cx="%s" cy="%s" r="4.5"><title>%s%s: %s, %s (outlier)</title></circle>')
          :format(num(X(p[1])), num(Y(p[2])), esc(s.name or "point"),
            p[3] and esc(" seq " .. tostring(p[3])) or "", esc(value_text(p[1], xu)),
            esc(yo.unit == "ns" and M.fmt_ns(p[2]) or M.fmt(p[2])))
      end
      out[#out + 1] = "</g>"
    end
  end

  -- legend and note
  for _, it in ipairs(items) do
    local ly = legend_top + it.y
    if it.kind == "dot" then
      out[#out + 1] = ('<circle cx="%s" cy="%s" r="5" fill="%s" fill-opacity="0.75" stroke="%s"/>'):format(
        num(it.x + 6), num(ly), it.color, it.color)
    elseif it.kind == "outlier" then
      out[#out + 1] = ('<circle cx="%s" cy="%s" r="4.5" fill="#bbbbbb" stroke="#111" stroke-width="1.6"/>')
        :format(num(it.x + 6), num(ly))
    else
      out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#222" stroke-width="2" '
        .. 'stroke-dasharray="7 4"/>'):format(num(it.x), num(ly), num(it.x + 16), num(ly))
    end
    for k, l in ipairs(it.lines) do
      out[#out + 1] = text(it.x + 22, ly + 4 + (k - 1) * 16, l, 'font-size="12"')
    end
  end
  local ny = legend_top + legend_h
  for _, l in ipairs(notes) do
    out[#out + 1] = text(ml, ny, l, 'font-size="12" fill="#555"')
    ny = ny + 16
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

------------------------------------------------------------------------------
-- stacked horizontal bars
------------------------------------------------------------------------------

function M.stacked_bars(o)
  if type(o) ~= "table" then error("svg.stacked_bars: expected a table of options", 2) end
  local series, bars = o.series or {}, o.bars or {}
  if type(series) ~= "table" or type(bars) ~= "table" then
    error("svg.stacked_bars: series and bars must be lists", 2)
  end
  for i, b in ipairs(bars) do
    if type(b) ~= "table" or type(b.values) ~= "table" then
      error(("svg.stacked_bars: bar %d must be {label=, values={name=number}}"):format(i), 2)
    end
  end
  local W = o.width or 900
  local label_w = 60
  for _, b in ipairs(bars) do label_w = math.max(label_w, 16 + M.text_width(tostring(b.label or ""), 13)) end
  label_w = math.min(label_w, 260)
  local gap = 8 -- drawn before a series marked gap_before
  -- A series marked gap_before starts a separate part of the bar (drawn after
  -- a gap): the printed total is the sum of the parts before the first gap.
  local total_max = 0
  local totals = {}
  for i, b in ipairs(bars) do
    local t, main, in_main = 0, 0, true
    for _, s in ipairs(series) do
      local v = b.values[s.name] or 0
      if type(v) ~= "number" then
        error(("svg.stacked_bars: bar %d, series '%s': value must be a number"):format(i, s.name), 2)
      end
      if s.gap_before then in_main = false end
      t = t + math.max(0, v)
      if in_main then main = main + math.max(0, v) end
    end
    totals[i] = main
    total_max = math.max(total_max, t)
  end
  -- the right margin holds the longest total written after its bar
  local mr = 40
  for i, b in ipairs(bars) do
    local t = (o.unit == "ns" and M.fmt_ns(totals[i]) or M.fmt(totals[i]))
      .. (b.note and (" (" .. b.note .. ")") or "")
    mr = math.max(mr, 16 + M.text_width(t, 12))
  end
  local subtitle = o.subtitle and M.wrap(o.subtitle, W - 32, 13) or {}
  local title = o.title and M.wrap(o.title, W - 32, 16, true) or {}
  local warn = {}
  for _, w in ipairs(o.warnings or {}) do
    for _, l in ipairs(M.wrap(w, W - 32, 12)) do warn[#warn + 1] = l end
  end
  local ml, mt = label_w, 26 + 20 * math.max(#title - 1, 0) + 17 * #subtitle + 16 * #warn + 8
  local bar_gap = 14
  local pw = W - ml - mr
  -- each bar's label in lines that fit the label column; a bar is as tall
  -- as its label
  local labels, heights, tops = {}, {}, {}
  local plot_h = bar_gap
  for i, b in ipairs(bars) do
    labels[i] = M.wrap_label(b.label or ("bar " .. i), ml - 16, 13)
    heights[i] = math.max(26, 16 * #labels[i] + 6)
    tops[i] = mt + plot_h
    plot_h = plot_h + heights[i] + bar_gap
  end
  -- legend rows below the axis
  -- (wrapped, never cut)
  local legend = {}
  for i, s in ipairs(series) do
    legend[i] = { label = s.name .. (s.note and (" (" .. s.note .. ")") or "") }
  end
  local legend_h = M.legend_layout(legend, W - 24, { mark = 20, gap = 14, min = 110, row = 22 })
  for _, item in ipairs(legend) do item.x = 16 + item.x end
  local H = mt + plot_h + 48 + legend_h + 16
  local u = M.unit_for(o.unit, total_max)
  local ticks, _, hi = M.ticks(0, total_max > 0 and total_max / u.scale or 1, 6)
  local ngaps = 0
  for _, s in ipairs(series) do if s.gap_before then ngaps = ngaps + 1 end end
  local span = pw - ngaps * gap
  local function Wd(v) return (v / u.scale) / hi * span end

  local out = open_svg(W, H, o.title)
  local defs = {}
  for si, s in ipairs(series) do
    if s.hatch then
      s._pattern = next_id("hatch")
      local c = s.color or M.DARK
      defs[#defs + 1] = ('<pattern id="%s" width="8" height="8" patternUnits="userSpaceOnUse" '
        .. 'patternTransform="rotate(45)"><rect width="8" height="8" fill="#ffffff"/>'
        .. '<rect width="4" height="8" fill="%s"/></pattern>'):format(s._pattern, c)
    end
    s._color = s.color or (s.hatch and M.DARK) or M.color(si)
  end
  if #defs > 0 then out[#out + 1] = "<defs>" .. table.concat(defs) .. "</defs>" end
  local ty = 22
  for _, l in ipairs(title) do
    out[#out + 1] = text(16, ty, l, 'font-size="16" font-weight="bold"')
    ty = ty + 20
  end
  for _, l in ipairs(subtitle) do
    out[#out + 1] = text(16, ty, l, 'font-size="13" fill="#333"')
    ty = ty + 17
  end
  for _, l in ipairs(warn) do
    out[#out + 1] = text(16, ty, l, 'font-size="12" fill="' .. M.WARN .. '"')
    ty = ty + 16
  end

  -- grid
  out[#out + 1] = '<g stroke="#e3e3e3" stroke-width="1">'
  for _, v in ipairs(ticks) do
    local x = ml + v / hi * span
    out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s"/>'):format(num(x), num(mt), num(x), num(mt + plot_h))
  end
  out[#out + 1] = "</g>"

  for i, b in ipairs(bars) do
    local y, bar_h = tops[i], heights[i]
    local ly = y + bar_h / 2 + 5 - 8 * (#labels[i] - 1)
    for k, l in ipairs(labels[i]) do
      out[#out + 1] = text(ml - 10, ly + 16 * (k - 1), l, 'text-anchor="end" font-size="13"')
    end
    local x = ml
    for _, s in ipairs(series) do
      if s.gap_before then x = x + gap end
      local v = math.max(0, b.values[s.name] or 0)
      if v > 0 then
        local w = Wd(v)
        local share = totals[i] > 0 and (100 * v / totals[i]) or 0
        local vt = o.unit == "ns" and M.fmt_ns(v) or (M.fmt(v) .. (o.unit and (" " .. o.unit) or ""))
        local tip = ("%s | %s: %s (%s of the bar)%s"):format(b.label or "", s.name, vt,
          report().pct(share / 100),
          s.note and (", " .. s.note) or "")
        out[#out + 1] = ('<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#ffffff" '
          .. 'stroke-width="0.6"><title>%s</title></rect>'):format(num(x), num(y), num(math.max(w, 0.5)),
          num(bar_h), s._pattern and ("url(#" .. s._pattern .. ")") or s._color, esc(tip))
        x = x + w
      end
    end
    local total_text = o.unit == "ns" and M.fmt_ns(totals[i]) or M.fmt(totals[i])
    out[#out + 1] = text(x + 6, y + bar_h / 2 + 5, total_text .. (b.note and (" (" .. b.note .. ")") or ""),
      'font-size="12" fill="#333"')
  end

  -- value axis
  local ay = mt + plot_h
  out[#out + 1] = ('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.2"/>'):format(
    num(ml), num(ay), num(ml + span), num(ay))
  out[#out + 1] = '<g font-size="12" fill="#333">'
  for _, v in ipairs(ticks) do
    out[#out + 1] = text(ml + v / hi * span, ay + 17, M.fmt(v), 'text-anchor="middle"')
  end
  out[#out + 1] = "</g>"
  out[#out + 1] = text(ml + span / 2, ay + 38, axis_label(o.value_label or "value", u),
    'text-anchor="middle" font-size="13"')

  -- legend
  local ly0 = ay + 58
  for si, s in ipairs(series) do
    local item = legend[si]
    local ly = ly0 + item.y
    out[#out + 1] = ('<rect x="%s" y="%s" width="14" height="14" fill="%s" stroke="#555" stroke-width="0.5"/>')
        :format(num(item.x), num(ly - 11), s._pattern and ("url(#" .. s._pattern .. ")") or s._color)
    for k, l in ipairs(item.lines) do
      out[#out + 1] = text(item.x + 20, ly + 1 + (k - 1) * 16, l, 'font-size="12"')
    end
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

return M
