-- phaseprobe.output.csv: records as CSV, and CSV read back as records.
--
--   csv.csv(set, path [, stream])   one row per record, header first
--   csv.read_csv(path [, opts])     -> records, or nil, "path:line: what"
--                                   (opts.prefix: the prefix they print with;
--                                   opts.max_bytes: the largest file read)
--
-- Sits after the record sets in the flow, beside output/json.lua (whose
-- number text it shares: integers are written as exact unsigned decimals,
-- floats with 17 significant digits).
--
-- CSV follows RFC 4180 with one convention: strings are always quoted and
-- numbers never are (Python's QUOTE_NONNUMERIC), so a tag value "128" stays
-- a string when read back. An empty unquoted cell is an absent field.
local recview = require "phaseprobe.recview"
local files = require "phaseprobe.output.files"
local json = require "phaseprobe.output.json"

local M = {}

local number_text, bad_value, where_field = json.number_text, json.bad_value, json.where_field

local function csv_quote(s)
  return '"' .. s:gsub('"', '""') .. '"'
end

local function csv_name(s)
  if s:find('[",\r\n]') or s:match("^%s") or s:match("%s$") then return csv_quote(s) end
  return s
end

-- Columns: every schema field in first-seen line order, then every other
-- key (tags) sorted, so a one-schema set reads back in its own print order.
local function csv_columns(records)
  local cols, seen, extra, extra_seen = {}, {}, {}, {}
  for _, r in ipairs(records) do
    local idx = recview.layout(r).index
    for _, k in ipairs(recview.ordered_keys(r)) do
      if idx[k] then
        if not seen[k] then
          seen[k] = true
          cols[#cols + 1] = k
        end
      elseif not extra_seen[k] then
        extra_seen[k] = true
        extra[#extra + 1] = k
      end
    end
  end
  table.sort(extra)
  for _, k in ipairs(extra) do
    if not seen[k] then cols[#cols + 1] = k end
  end
  return cols
end

function M.csv(set, path, stream)
  local records = recview.collect(set, "export.csv")
  local cols = csv_columns(records)
  local lines = {}
  local head = {}
  for i, c in ipairs(cols) do head[i] = csv_name(c) end
  if #cols > 0 then lines[1] = table.concat(head, ",") end
  for i, r in ipairs(records) do
    local cells = {}
    for j, c in ipairs(cols) do
      local v = r[c]
      if v == nil then
        cells[j] = ""
      else
        if type(v) == "string" then
          cells[j] = csv_quote(v)
        elseif math.type(v) == "integer" and v >= 0 then
          cells[j] = tostring(v)
        elseif type(v) == "number" then
          cells[j] = number_text(v, where_field(i, c))
        else
          bad_value(v, i, c)
        end
      end
    end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  local w, err = files.open_out(path, "export.csv", stream)
  if not w then return nil, err end
  for _, l in ipairs(lines) do
    w.write(l)
    w.write("\n")
  end
  return w.close()
end

-- RFC 4180 rows: a list of rows, each a list of { text, quoted, line }.
-- Returns nil, "line: message" on malformed input.
local function csv_rows(text)
  local rows, row = {}, {}
  local pos, line, n = 1, 1, #text
  local row_line = 1
  if text:sub(1, 3) == "\239\187\191" then pos = 4 end -- UTF-8 byte order mark
  while pos <= n do
    local c = text:sub(pos, pos)
    local cell
    if c == '"' then
      local start_line = line
      local parts, p = {}, pos + 1
      while true do
        local q = text:find('"', p, true)
        if not q then return nil, ("%d: quoted field never closed"):format(start_line) end
        parts[#parts + 1] = text:sub(p, q - 1)
        if text:sub(q + 1, q + 1) == '"' then
          parts[#parts + 1] = '"'
          p = q + 2
        else
          p = q + 1
          break
        end
      end
      local s = table.concat(parts)
      local _, nl = s:gsub("\n", "")
      line = line + nl
      cell = { text = s, quoted = true }
      pos = p
      local after = text:sub(pos, pos)
      if after ~= "," and after ~= "\n" and after ~= "\r" and after ~= "" then
        return nil, ("%d: text after a closing quote"):format(line)
      end
    else
      local e = text:find("[,\r\n]", pos) or n + 1
      local s = text:sub(pos, e - 1)
      if s:find('"', 1, true) then
        return nil, ("%d: a quote inside an unquoted field"):format(line)
      end
      cell = { text = s, quoted = false }
      pos = e
    end
    row[#row + 1] = cell
    local d = text:sub(pos, pos)
    if d == "," then
      pos = pos + 1
      if pos > n then row[#row + 1] = { text = "", quoted = false } end
    else
      if d == "\r" then pos = pos + 1 end
      if text:sub(pos, pos) == "\n" then pos = pos + 1 end
      row.line = row_line
      rows[#rows + 1] = row
      row = {}
      line = line + 1
      row_line = line
    end
  end
  return rows
end

local function cell_value(cell)
  if cell.quoted then return cell.text end
  local s = cell.text
  if s == "" then return nil end
  if s:match("^%-?%d+$") then
    local v = recview.parse_int(s)
    if v == nil then return nil, s .. " does not fit in 64 bits" end
    return v
  end
  local f = s:match("^[%-%d.eE+]+$") and tonumber(s)
  if f then return f end
  return s
end

function M.read_csv(path, opts)
  opts = opts or {}
  local text, err = files.slurp(path, "export.read_csv", opts.max_bytes)
  if not text then return nil, err end
  local rows, perr = csv_rows(text)
  if not rows then return nil, path .. ":" .. perr end
  local out = {}
  if #rows == 0 then return out end
  local header = rows[1]
  local cols, seen = {}, {}
  for i, cell in ipairs(header) do
    local name = cell.text
    if name == "" then return nil, ("%s:%d: column %d has no name"):format(path, header.line, i) end
    if seen[name] then return nil, ("%s:%d: column '%s' appears twice"):format(path, header.line, name) end
    seen[name] = true
    cols[i] = name
  end
  local prefix = opts.prefix or recview.DEFAULT_PREFIX
  for ri = 2, #rows do
    local row = rows[ri]
    if not (#row == 1 and row[1].text == "" and not row[1].quoted) then -- blank lines are skipped
      if #row ~= #cols then
        return nil, ("%s:%d: %d fields, the header has %d"):format(path, row.line, #row, #cols)
      end
      local r, present = {}, {}
      for i, cell in ipairs(row) do
        local v, verr = cell_value(cell)
        if verr then return nil, ("%s:%d: column '%s': %s"):format(path, row.line, cols[i], verr) end
        if v ~= nil then
          r[cols[i]] = v
          present[#present + 1] = cols[i]
        end
      end
      out[#out + 1] = setmetatable(r, recview.record_mt(prefix, present))
    end
  end
  return out
end

return M
