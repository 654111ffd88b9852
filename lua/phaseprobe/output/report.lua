--- phaseprobe.output.report: aligned text tables and the one number style, for
-- the terminal and the REPL. Sits at the end of the flow: record sets and
-- analysis results in, text out.
--
--   local report = require "phaseprobe.output.report"
--   print(report.table(rows, {
--     { key = "name", title = "phase" },
--     { key = "median", title = "median", fmt = report.ns },
--     { key = "why", title = "why", wrap = true },   -- under the row when too wide
--   }))
--
-- Numbers: times in SI units with 3 significant digits (700 ps, 950 ns,
-- 12.3 us, 4.56 ms, 1.23 s, 9.22 Gs), counts with thousands separators
-- (1,350), signs as a person writes them (-18.6 us, +1.20 ms; an equation
-- "a - b x q", never "+ -b"; a value that rounds to zero has no sign: "0
-- ns", "0.0%", never "-0%"). With report.raw set (the command's --raw)
-- every integer prints exactly, time in ns and u64 values above 2^63-1
-- included. report.micro is the symbol of microseconds: "us" in text, "µs"
-- in the HTML page and the SVG plots (report.si(v, "µs")).
--
-- Tables are at most report.width (100) columns wide: a column marked
-- wrap = true (a long explanation) moves under its row, indented and
-- wrapped, when the table would be wider; report.wide (--wide) keeps it in
-- the row.
--
-- Where it sits: the end of the flow for text: record sets print through
-- it, and the commands print the analyses with it. What each analysis
-- becomes as text (report.phases, report.scaling, report.fits,
-- report.starvation, report.overrun, report.variants, report.compare,
-- report.whatif) is output/analyses.lua's, re-exported here; it prints
-- through this module's numbers and tables.
local M = {}

M.raw = false
M.wide = false
M.width = 100

-- Decimal text of a u64 held in a Lua integer (negative = above 2^63-1).
local function u64_text(v)
  if v >= 0 then return string.format("%d", v) end
  local q = (v >> 1) // 5
  return string.format("%d%d", q, v - q * 10)
end

-- A number's text without its minus when it rounds to zero ("-0", "-0.00").
local function unsigned_zero(s)
  if s:sub(1, 1) == "-" and not s:find("[1-9]") then return s:sub(2) end
  return s
end

-- v (1 <= |v| < 1000, or a rounding of it) with 3 significant digits.
local function sig3(v)
  local a = math.abs(v)
  if a >= 99.95 then return string.format("%.0f", v) end
  if a >= 9.995 then return string.format("%.1f", v) end
  return string.format("%.2f", v)
end

--- Digits grouped by thousands: "1,234,567" (a leading minus kept).
function M.group(digits)
  local neg, d, frac = digits:match("^(%-?)(%d+)(.*)$")
  if not d then return digits end
  local head = #d % 3
  local parts = { head > 0 and d:sub(1, head) or nil }
  for i = head + 1, #d, 3 do parts[#parts + 1] = d:sub(i, i + 2) end
  return neg .. table.concat(parts, ",") .. frac
end

M.micro = "us"

-- The units of time past the nanosecond, each 1000 times the one before.
local UNITS = { "ns", false, "ms", "s", "ks", "Ms", "Gs" }

--- Nanoseconds in SI units with 3 significant digits, whatever report.raw
-- says: "700 ps", "950 ns", "12.3 us", "4.56 ms", "1.23 s", "9.22 Gs".
-- An integer below 1000 prints as it is ("5 ns"); a value below 0.001 ps
-- (float noise) is 0; an integer below -2^62 is a u64 above 2^63-1.
-- micro: the symbol of microseconds (default report.micro).
function M.si(v, micro)
  if v == nil or v ~= v then return "-" end
  if type(v) ~= "number" then return tostring(v) end
  if type(micro) ~= "string" then micro = M.micro end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  if math.type(v) == "integer" and v < -(1 << 62) then v = v + 2.0 ^ 64 end
  local a = math.abs(v)
  if a < 0.0000005 then return "0 ns" end
  if a < 0.9995 then
    local ps = v * 1000
    if math.abs(ps) >= 0.9995 then return unsigned_zero(sig3(ps)) .. " ps" end
    return unsigned_zero(string.format("%#.3g", ps)) .. " ps"
  end
  if a < 999.5 then
    if math.type(v) == "integer" or v == math.floor(v) then
      return string.format("%.0f ns", v)
    end
    return sig3(v) .. " ns"
  end
  local k, x = 1, v
  while math.abs(x) >= 999.5 and k < #UNITS do
    x = x / 1000
    k = k + 1
  end
  local text = math.abs(x) >= 999.5 and M.group(string.format("%.0f", x)) or sig3(x)
  return text .. " " .. (UNITS[k] or micro)
end

--- Nanoseconds with a unit (report.si); with report.raw, the integer ns
-- (a non-integer to 3 decimals at most).
function M.ns(v, micro)
  if M.raw and type(v) == "number" and v == v then
    if math.type(v) == "integer" then
      return v < -(1 << 62) and u64_text(v) or string.format("%d", v)
    end
    if v == math.floor(v) or math.abs(v) >= 1e15 then return unsigned_zero(string.format("%.0f", v)) end
    return unsigned_zero((string.format("%.3f", v):gsub("0+$", ""):gsub("%.$", "")))
  end
  return M.si(v, micro)
end

--- A signed ns difference: "+1.20 ms", "-950 ns", "0 ns" (no sign on a
-- value that rounds to zero).
function M.dns(v, micro)
  if v == nil or v ~= v then return "-" end
  local s = M.ns(math.abs(v), micro)
  if not s:find("[1-9]") then return s end
  if v > 0 then return "+" .. s elseif v < 0 then return "-" .. s end
  return s
end

--- A share: 0.25 -> "25.0%" (decimals: default 1); past 1,000% grouped
-- and whole ("1,889%"); no sign on a share that rounds to zero.
function M.pct(v, decimals)
  if v == nil or type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge then
    return "-"
  end
  decimals = type(decimals) == "number" and math.tointeger(decimals) or 1
  local p = v * 100
  if math.abs(p) >= 999.5 then decimals = 0 end
  return unsigned_zero(M.group(string.format("%." .. decimals .. "f", p))) .. "%"
end

--- A number for people, whatever report.raw says: integers with thousands
-- separators ("1,350"); other numbers to 3 significant digits, grouped past
-- 1,000 ("2,394", "17.5", "0.125"), never an exponent down to 1e-5.
function M.plain(v)
  if v == nil then return "-" end
  if type(v) ~= "number" then return tostring(v) end
  if v ~= v then return "-" end
  if math.type(v) == "integer" then return M.group(string.format("%d", v)) end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  local a = math.abs(v)
  if a >= 999.5 then return unsigned_zero(M.group(string.format("%.0f", v))) end
  if a == 0 then return "0" end
  local s = string.format("%.3g", v)
  if s:find("e", 1, true) then s = string.format("%.3f", v) end
  return unsigned_zero(s)
end

--- A count: report.plain; with report.raw, integers exactly (floats to 17
-- significant digits).
function M.num(v)
  if M.raw and type(v) == "number" and v == v then
    if math.type(v) == "integer" then return string.format("%d", v) end
    if v ~= math.huge and v ~= -math.huge then return string.format("%.17g", v) end
  end
  return M.plain(v)
end

-- The plural of an English noun: "records", "dispatches", "entries".
local function plural_of(word)
  if word:match("[sxz]$") or word:match("[cs]h$") then return word .. "es" end
  if word:match("[^aeiou]y$") then return (word:gsub("y$", "ies")) end
  return word .. "s"
end

--- A count and what it counts, as a person writes them: "1 record",
-- "2,048 records", "1 dispatch", "3 dispatches" (plural: the word for
-- many, when it is not word .. "s" or the other English rules). Without
-- a word, report.num.
function M.count(v, word, plural)
  if word == nil then return M.num(v) end
  return M.num(v) .. " " .. (v == 1 and word or plural or plural_of(word))
end

--- "a + b x q" as a person writes it: "22.4 us + 136 ns x nodes",
-- "-766 ns + 7.16 us x fixpoint", "2.94 us - 1.20 ns x nodes".
function M.equation(intercept, slope, quantity)
  local s = M.ns(intercept)
  if slope == nil or slope == 0 then return s end
  return string.format("%s %s %s x %s", s, slope < 0 and "-" or "+", M.ns(math.abs(slope)),
    quantity)
end

--- A fit quality or R^2 with two decimals.
function M.q(v)
  if v == nil or v ~= v then return "-" end
  return string.format("%.2f", v)
end

--- The columns a text takes: its UTF-8 characters (its bytes when it is
-- no valid UTF-8).
local function width(s)
  return utf8.len(s) or #s
end
M.text_width = width

local function pad(s, w, right)
  local n = w - width(s)
  if n <= 0 then return s end
  if right then return string.rep(" ", n) .. s end
  return s .. string.rep(" ", n)
end

-- A word wider than w columns in pieces that fit: cut after a '/', '+',
-- ',', '_' or '-' where one lies in reach, else at w.
local function pieces(word, w)
  local out = {}
  w = math.max(w, 8)
  while width(word) > w do
    local cut = utf8.offset(word, w + 1) - 1
    local head = word:sub(1, cut)
    local at = head:match("^.*()[/+,_%-]")
    if at and at > w // 3 then cut = at end
    out[#out + 1] = word:sub(1, cut)
    word = word:sub(cut + 1)
  end
  out[#out + 1] = word
  return out
end

--- Words of `text` in lines of at most `w` columns, each starting with
-- `indent` (the first with `first`, default indent); a word wider than the
-- line (a long path) is cut where it can be (after a '/', '+', ',', '_' or
-- '-').
function M.wrap(text, w, indent, first)
  indent = indent or ""
  local out, lead = {}, first or indent
  local line, empty = lead, true
  local function flush()
    out[#out + 1] = line
    lead = indent
    line, empty = lead, true
  end
  local function add(word)
    if not empty and width(line) + 1 + width(word) > w then flush() end
    line = empty and (lead .. word) or (line .. " " .. word)
    empty = false
  end
  -- a number stays on the line of its unit ("1.16 ns")
  text = tostring(text):gsub("(%d) (%a?s)%f[%A]", "%1\1%2")
  for word in text:gmatch("%S+") do
    word = word:gsub("\1", " ")
    if width(indent) + width(word) > w then
      for _, p in ipairs(pieces(word, w - math.max(width(indent), width(lead)))) do
        if not empty then flush() end
        add(p)
      end
    else
      add(word)
    end
  end
  if not empty then out[#out + 1] = line end
  return out
end

--- Renders rows as an aligned table.
-- columns: list of {key=, title=, fmt=function(value, row), align="left"|"right",
-- wrap=true} (key may also be a function(row)). opts: {indent=, sep=,
-- width=, wide=} (sep: between columns, default two spaces; the header is
-- underlined with dashes). A wrap column that would make the table wider
-- than opts.width (default report.width) is written under each row instead,
-- unless opts.wide or report.wide; a table still too wide is written in
-- parts, each within the width and each led by the first column (unless
-- opts.wide or report.wide).
function M.table(rows, columns, opts)
  opts = opts or {}
  local sep = opts.sep or "  "
  local indent = opts.indent or ""
  local maxw = opts.width or M.width
  local wide = opts.wide or M.wide
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
  -- the columns shown in the row, and those moved under it
  local shown, under = {}, {}
  local total = width(indent)
  for c = 1, #columns do total = total + widths[c] + (c > 1 and #sep or 0) end
  for c, col in ipairs(columns) do
    if col.wrap and not wide and total > maxw then
      under[#under + 1] = c
      total = total - widths[c] - #sep
    else
      shown[#shown + 1] = c
    end
  end
  -- parts of at most maxw columns, each led by the first column
  local parts = { shown }
  if total > maxw and not wide and #shown > 2 then
    parts = {}
    local first = shown[1]
    local part, w = { first }, width(indent) + widths[first]
    for i = 2, #shown do
      local c = shown[i]
      if #part > 1 and w + #sep + widths[c] > maxw then
        parts[#parts + 1] = part
        part, w = { first }, width(indent) + widths[first]
      end
      part[#part + 1] = c
      w = w + #sep + widths[c]
    end
    parts[#parts + 1] = part
  end
  local out = {}
  local function line(items)
    out[#out + 1] = (indent .. table.concat(items, sep)):gsub("%s+$", "")
  end
  for p, cols in ipairs(parts) do
    if p > 1 then out[#out + 1] = "" end
    local head, rule = {}, {}
    for i, c in ipairs(cols) do
      local col = columns[c]
      head[i] = pad(col.title or tostring(col.key), widths[c], right[c])
      rule[i] = string.rep("-", widths[c])
    end
    line(head)
    line(rule)
    for r = 1, #rows do
      local items = {}
      for i, c in ipairs(cols) do items[i] = pad(cells[r][c], widths[c], right[c]) end
      line(items)
      for _, c in ipairs(p == #parts and under or {}) do
        local text = cells[r][c]
        if text ~= "" and text ~= "-" then
          for _, l in ipairs(M.wrap(text, maxw, indent .. "    ")) do out[#out + 1] = l end
        end
      end
    end
  end
  return table.concat(out, "\n")
end

--- Fields whose sum (and mean) mean nothing: ids and timestamps.
function M.is_label_field(name)
  return name == "seq" or name == "tid" or name == "start_ns" or name == "encode"
    or name == "@line" or name:match("_id$") ~= nil
end

--- A summary figure k (min, median, ..., sum) of a summary row: with
-- report.raw and a summary of integers, the exact decimal the summary
-- carries (_raw: min, max and the sum exactly, the mean and the quantiles
-- rounded to the nearest integer exactly), which a Lua number cannot hold
-- past 2^53 (a u64 past 2^63-1 is a float); otherwise fmt(v, row).
function M.figure(k, v, row, fmt)
  local r = M.raw and v ~= nil and type(row) == "table" and row._raw
  if r and r[k] then return r[k] end
  return fmt(v, row)
end

--- The statistics columns for summaries (of ns fields unless fmt given).
-- With opts.same_count, the count column is left out (the caller says it).
function M.summary_columns(fmt, opts)
  fmt = fmt or M.ns
  local cols = {}
  if not (opts and opts.same_count) then
    cols[#cols + 1] = { key = "count", title = "count", fmt = M.num }
  end
  for _, k in ipairs { "min", "median", "mean", "p90", "p99", "max", "sum" } do
    cols[#cols + 1] = { key = k, title = k == "sum" and "total" or k, align = "right",
      fmt = function(v, row) return M.figure(k, v, row, fmt) end }
  end
  return cols
end

-- Whether every item's summary has the same count: that count, or nil.
local function same_count(items)
  local n
  for _, it in ipairs(items) do
    local c = it.summary and it.summary.count
    if n == nil then n = c elseif c ~= n then return nil end
  end
  return n
end

--- A summary table with one row per named summary:
-- items = { {name=, summary={count=,...}, [extra keys]}, ... }. When every
-- summary has the same count it is said once above the table
-- ("1,350 records each") instead of in a column.
function M.summaries(items, opts)
  opts = opts or {}
  local rows = {}
  for i, it in ipairs(items) do
    local row = {}
    for k, v in pairs(it.summary or {}) do row[k] = v end
    for k, v in pairs(it) do if k ~= "summary" then row[k] = v end end
    if M.is_label_field(it.name or "") then row.sum, row.mean = nil, nil end
    rows[i] = row
  end
  local n = #items > 1 and same_count(items) or nil
  local cols = { { key = "name", title = opts.title or "field" } }
  local fmt = opts.fmt
  for _, c in ipairs(M.summary_columns(fmt, { same_count = n ~= nil })) do cols[#cols + 1] = c end
  for _, c in ipairs(opts.extra or {}) do cols[#cols + 1] = c end
  local text = M.table(rows, cols, opts)
  if n then text = string.format("%s%s each\n", opts.indent or "", M.count(n, "record")) .. text end
  return text
end

-- ---- the choices of an option, for its error ------------------------------

--- What a field option may name in a record set, for an error that lists
-- the choices: "tags: a, b; fields: x, y, ..." (tags: fields holding text).
function M.field_choices(set)
  local cols = set:columns()
  local tags, fields = {}, {}
  for _, f in ipairs(set:fields()) do
    if cols:kind(f) == "string" then tags[#tags + 1] = f else fields[#fields + 1] = f end
  end
  local parts = {}
  if #tags > 0 then parts[#parts + 1] = "tags: " .. table.concat(tags, ", ") end
  if #fields > 0 then parts[#parts + 1] = "fields: " .. table.concat(fields, ", ") end
  return #parts > 0 and table.concat(parts, "; ") or "no fields"
end

--- The numeric fields of a record set, for the error of an option that
-- takes one: "quantities: nodes, ptx_bytes; other fields: seq, wall_ns".
function M.number_choices(set)
  local cols = set:columns()
  local quantities, is_q, others = {}, {}, {}
  for _, q in ipairs(set:layout().quantities) do
    if set:has(q) then
      quantities[#quantities + 1] = q
      is_q[q] = true
    end
  end
  for _, f in ipairs(set:fields()) do
    if cols:kind(f) ~= "string" and not is_q[f] then others[#others + 1] = f end
  end
  local parts = {}
  if #quantities > 0 then parts[#parts + 1] = "quantities: " .. table.concat(quantities, ", ") end
  if #others > 0 then
    parts[#parts + 1] = (#quantities > 0 and "other fields: " or "fields: ") .. table.concat(others, ", ")
  end
  return #parts > 0 and table.concat(parts, "; ") or "no numeric fields"
end

--- The key of a group of set:group(f) as its records' lines write it
-- (a u64 past 2^63-1 by its digits, not as a float); "(none)" for the
-- records that lack f.
function M.key_text(g, f)
  if g.missing then return "(none)" end
  if math.type(g.key) == "float" then return g.set[1]:_text(f) end
  return tostring(g.key)
end

--- The values field f takes in a record set, as text (at most `limit`,
-- default 20, then "..."; a u64 past 2^63-1 by its digits).
function M.field_values(set, f, limit)
  limit = limit or 20
  local out = {}
  if not set:has(f) then return "none" end
  for _, g in ipairs(set:group(f)) do
    if #out == limit then out[#out + 1] = "..."; break end
    out[#out + 1] = M.key_text(g, f)
  end
  return table.concat(out, ", ")
end

-- ---- printable results (the REPL prints them with tostring) --------------

local printable_mts = setmetatable({}, { __mode = "k" })

--- Gives the plain table t a metatable whose __tostring is render(t), so
-- the REPL prints it as text; returns t. Tables that already have a
-- metatable are left as they are.
function M.printable(t, render, name)
  if type(t) ~= "table" or getmetatable(t) ~= nil then return t end
  local mt = printable_mts[render]
  if not mt then
    mt = { __tostring = render, __name = name or "phaseprobe.result" }
    printable_mts[render] = mt
  end
  return setmetatable(t, mt)
end

--- A summary (set:summary) of the field `name`, as a one-row table.
function M.summary_text(name)
  return function(s)
    local fmt = name:match("_ns$") and M.ns or M.num
    return "phaseprobe.summary of " .. name .. "\n"
      .. M.summaries({ { name = name, summary = s } }, { fmt = function(v) return fmt(v) end })
  end
end

--- A line fit (set:fit, fit.line) of y against x, both methods.
function M.fit_text(x, y)
  return function(f)
    local out = { string.format("phaseprobe.fit of %s against %s: %s, %s distinct %s",
      y or "y", x or "x", M.count(f.n or 0, "point"), M.num(f.distinct_x or 0), x or "x") }
    if f.ok and f.ls and f.ts then
      local fmt = (y or ""):match("_ns$") and M.equation or function(a, b, q)
        return string.format("%s %s %s x %s", M.num(a), b < 0 and "-" or "+", M.num(math.abs(b)), q)
      end
      out[#out + 1] = string.format("  least squares  %s  (R2 %s)", fmt(f.ls.intercept, f.ls.slope,
        x or "x"), M.q(f.ls.r2))
      out[#out + 1] = string.format("  Theil-Sen      %s  (quality %s, %s%s)",
        fmt(f.ts.intercept, f.ts.slope, x or "x"), M.q(f.ts.quality), M.count(f.ts.pairs or 0, "pair"),
        f.ts.sampled and ", sampled" or "")
    else
      out[#out + 1] = "  no fit (fewer than 2 distinct x)"
    end
    return table.concat(out, "\n")
  end
end

--- A list of names (set:fields) on wrapped lines.
function M.list_text(title)
  return function(list)
    local names = {}
    for i, v in ipairs(list) do names[i] = tostring(v) end
    return table.concat(M.wrap(string.format("%s (%s): %s", title, M.num(#names),
      table.concat(names, ", ")), M.width, ""), "\n")
  end
end

--- One scaling verdict (fit.verdict): its row and its fits.
function M.verdict_text(v)
  local text = M.scaling({ quantities = {}, phases = { v }, nested = {} }):gsub("^[^\n]*\n", "")
  if v.fits and next(v.fits) then text = text .. "\n" .. M.fits(v) end
  return "phaseprobe.verdict\n" .. text
end

-- ---- analysis reports ------------------------------------------------------

-- The analyses as text are output/analyses.lua's, which prints through this
-- module (loaded on first use, so that each can require the other); each is
-- report.X as well.
local function analyses() return require "phaseprobe.output.analyses" end

--- Per-phase time (analyze.phases), nested regions under their phase.
function M.phases(rows) return analyses().phases(rows) end
--- Scaling verdicts (analyze.scaling): one row per phase.
function M.scaling(s) return analyses().scaling(s) end
--- All fits of one verdict: one row per quantity.
function M.fits(v) return analyses().fits(v) end
--- Starvation, residue and probe overhead (analyze.starvation).
function M.starvation(st) return analyses().starvation(st) end
--- Records whose named phases exceed wall (analyze.overrun): a note, or nil.
function M.overrun(o) return analyses().overrun(o) end
--- Tags that split the records into variants (analyze.variants): a warning, or nil.
function M.variants(found) return analyses().variants(found) end
--- A comparison (compare.sets), rows ranked by how much they explain.
function M.compare(r) return analyses().compare(r) end
--- A what-if projection (whatif.project / whatif.check).
function M.whatif(r) return analyses().whatif(r) end

local function lines(t) return table.concat(t, "\n") end

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
  local out = { string.format("%s: %s, %s damaged, %s other", M.count(rep.total, "line"),
    M.count(rep.parsed, "record"), M.num(rep.rejected), M.num(rep.other)) }
  local limit = opts.limit or 20
  for i, e in ipairs(rep.errors or {}) do
    if i > limit then
      local more = rep.rejected - limit
      out[#out + 1] = string.format("... and %s more rejected line%s", M.num(more),
        more == 1 and "" or "s")
      break
    end
    out[#out + 1] = string.format("%s:%d:%d: %s", e.file, e.line, e.column, e.what)
  end
  return lines(out)
end

return M
