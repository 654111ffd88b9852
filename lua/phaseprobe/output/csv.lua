-- phaseprobe.output.csv: records as CSV, and CSV read back as records.
--
--   csv.csv(set, path [, stream])   one row per record, header first
--   csv.read_csv(path [, opts])     -> record set, or nil, "path:line: what"
--                                   (opts.prefix: the prefix they print with;
--                                   opts.max_bytes: the largest file read)
--
-- Sits after the record sets in the flow, beside output/json.lua (whose
-- number text it shares: integers are written as exact decimals, floats
-- with 17 significant digits).
--
-- CSV follows RFC 4180 with one convention: strings are always quoted and
-- numbers never are (Python's QUOTE_NONNUMERIC), so a tag value "128" stays
-- a string when read back. An empty unquoted cell is an absent field.
local files = require "phaseprobe.output.files"
local json = require "phaseprobe.output.json"

local M = {}

local value_text = json.value_text

local function csv_quote(s)
  return '"' .. s:gsub('"', '""') .. '"'
end

local function csv_name(s)
  if s:find('[",\r\n]') or s:match("^%s") or s:match("%s$") then return csv_quote(s) end
  return s
end

-- Columns: the set's fields in order of first appearance (a one-schema set
-- reads back in its own print order).
function M.csv(set, path, stream)
  json.check_set(set, "export.csv")
  local cols = set:fields()
  local lines = {}
  local head = {}
  for i, c in ipairs(cols) do head[i] = csv_name(c) end
  if #cols > 0 then lines[1] = table.concat(head, ",") end
  for i = 1, set:count() do
    local r = set:record(i)
    local cells = {}
    for j, c in ipairs(cols) do
      local v = r[c]
      if v == nil then
        cells[j] = ""
      elseif type(v) == "string" then
        cells[j] = csv_quote(v)
      else
        cells[j] = value_text(r, i, c, v)
      end
    end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  return files.write_lines(path, "export.csv", stream, lines)
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

-- A cell as a {name, value} pair for the store: quoted cells are strings,
-- unquoted numbers go as their text (read exactly), an empty unquoted cell
-- is absent (nil).
local function cell_pair(name, cell)
  if cell.quoted then return { name, cell.text } end
  local s = cell.text
  if s == "" then return nil end
  if s:match("^%-?%d+$") or (s:match("^[%-%d.eE+]+$") and tonumber(s)) then return { name, s, true } end
  return { name, s }
end

function M.read_csv(path, opts)
  opts = opts or {}
  local text, err = files.slurp(path, "export.read_csv", opts.max_bytes)
  if not text then return nil, err end
  local rows, perr = csv_rows(text)
  if not rows then return nil, path .. ":" .. perr end
  local header = rows[1] or {}
  local cols, seen = {}, {}
  for i, cell in ipairs(header) do
    local name = cell.text
    if name == "" then return nil, ("%s:%d: column %d has no name"):format(path, header.line, i) end
    if seen[name] then return nil, ("%s:%d: column '%s' appears twice"):format(path, header.line, name) end
    seen[name] = true
    cols[i] = name
  end
  local out, lines = {}, {}
  for ri = 2, #rows do
    local row = rows[ri]
    if not (#row == 1 and row[1].text == "" and not row[1].quoted) then -- blank lines are skipped
      if #row ~= #cols then
        return nil, ("%s:%d: %d fields, the header has %d"):format(path, row.line, #row, #cols)
      end
      local pairs_ = {}
      for i, cell in ipairs(row) do pairs_[#pairs_ + 1] = cell_pair(cols[i], cell) end
      out[#out + 1] = pairs_
      lines[#out] = row.line
    end
  end
  return files.to_set(out, path, lines, opts.prefix)
end

return M
