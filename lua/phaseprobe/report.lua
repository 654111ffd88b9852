--- phaseprobe.report: aligned text tables and number formats, for the REPL
-- and the terminal.
--
--   local report = require "phaseprobe.report"
--   print(report.table(rows, {
--     { key = "name", title = "phase" },
--     { key = "median", title = "median", fmt = report.ns },
--   }))
--
-- Numbers are right-aligned, text left-aligned; widths count UTF-8
-- characters. Nanosecond figures print with a unit and three significant
-- digits (950 ns, 12.3 us, 4.56 ms, 1.23 s) unless report.raw is set, when
-- they print as integer ns.
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

return M
