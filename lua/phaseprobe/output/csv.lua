-- phaseprobe.output.csv: records as CSV, and CSV read back as records.
--
--   csv.csv(set, path [, stream [, opts]])
--                                   one row per record, header first
--                                   (streamed; opts.progress(done, total))
--   csv.read_csv(path [, opts])     -> record set, or nil, "path:line: what"
--   csv.rows(next_line [, max_row])  RFC 4180 rows read line by line (the
--                                   command's inputs read CSV through it)
--                                   (opts.prefix: the prefix they print with;
--                                   opts.max_bytes: the largest file read)
--
-- Sits after the record sets in the flow, beside output/json.lua (whose
-- number text it shares: each number as its record's line prints it).
--
-- CSV follows RFC 4180 with one convention: strings are always quoted and
-- numbers never are (Python's QUOTE_NONNUMERIC), so a tag value "128" stays
-- a string when read back. An empty unquoted cell is an absent field; any
-- other unquoted cell is read by the rule of record lines (pp_parse.h: a
-- number when written as JSON writes one, else a string: "007" written by
-- another tool unquoted stays "007").
local files = require "phaseprobe.output.files"
local json = require "phaseprobe.output.json"

local M = {}

local function csv_quote(s)
  return '"' .. s:gsub('"', '""') .. '"'
end

local function csv_name(s)
  if s:find('[",\r\n]') or s:match("^%s") or s:match("%s$") then return csv_quote(s) end
  return s
end

-- Columns: the set's fields in order of first appearance (a one-schema set
-- reads back in its own print order). Streams: a chunk of records at a
-- time (json.each_chunk), each value its record's own text (strings
-- quoted), so its memory does not grow with the set. opts.progress(done,
-- total) is called per chunk.
function M.csv(set, path, stream, opts)
  json.check_set(set, "export.csv")
  local cols, stringy = json.export_fields(set, "export.csv")
  local head = {}
  for i, c in ipairs(cols) do head[i] = csv_name(c) end
  local has_of, quoted_of = {}, {} -- per layout: its fields; those quoted (strings)
  local function has_in(L)
    local has = has_of[L]
    if not has then
      has = {}
      local quoted = {}
      for _, f in ipairs(L) do
        has[f] = true
        quoted[f] = stringy[f]
      end
      has_of[L], quoted_of[L] = has, quoted
    end
    return has, quoted_of[L]
  end
  local cells = {}
  local rows = json.layout_rows(function(L)
    local has = has_in(L)
    local pieces = {}
    for k, c in ipairs(cols) do
      if k > 1 then pieces[#pieces + 1] = "," end
      if has[c] then pieces[#pieces + 1] = k end
    end
    pieces[#pieces + 1] = "\n"
    return pieces
  end, csv_quote)
  return json.write_chunks(set, path, stream, "export.csv", cols,
    #cols > 0 and (table.concat(head, ",") .. "\n") or nil, json.chunk_rows(cols,
    function(m, L, texts, add)
      if #cols == 0 then return false end
      local _, quoted = has_in(L)
      return rows(m, L, texts, cols, quoted, add)
    end,
    function(L, texts, cur)
      local has = has_in(L)
      for k, c in ipairs(cols) do
        if has[c] then
          local n = cur[c] + 1
          cur[c] = n
          local t = texts[c][n]
          cells[k] = stringy[c] and csv_quote(t) or t
        else
          cells[k] = ""
        end
      end
      return table.concat(cells, ",", 1, #cols) .. "\n"
    end), opts)
end

-- One RFC 4180 row held in `text` (its physical lines joined by "\n"):
-- cells (strings) and, per cell, whether it was quoted; or nil and what is
-- wrong; or nil, nil, true when a quote is still open at the end (the row
-- goes on on the next line).
local function split_row(text)
  local cells, quoted = {}, {}
  if not text:find('"', 1, true) then
    local pos = 1
    while true do
      local c = text:find(",", pos, true)
      cells[#cells + 1] = text:sub(pos, (c or #text + 1) - 1)
      quoted[#cells] = false
      if not c then return cells, quoted end
      pos = c + 1
    end
  end
  local pos, n = 1, #text
  while true do
    if text:sub(pos, pos) == '"' then
      local parts, p = {}, pos + 1
      while true do
        local q = text:find('"', p, true)
        if not q then return nil, nil, true end
        parts[#parts + 1] = text:sub(p, q - 1)
        if text:sub(q + 1, q + 1) == '"' then
          parts[#parts + 1] = '"'
          p = q + 2
        else
          p = q + 1
          break
        end
      end
      cells[#cells + 1] = table.concat(parts)
      quoted[#cells] = true
      pos = p
      local after = text:sub(pos, pos)
      if after ~= "," and after ~= "" then return nil, "text after a closing quote" end
    else
      local e = text:find(",", pos, true) or n + 1
      local cell = text:sub(pos, e - 1)
      if cell:find('"', 1, true) then return nil, "a quote inside an unquoted field" end
      cells[#cells + 1] = cell
      quoted[#cells] = false
      pos = e
    end
    if pos > n then return cells, quoted end
    pos = pos + 1 -- past ','
    if pos > n then
      cells[#cells + 1] = ""
      quoted[#cells] = false
      return cells, quoted
    end
  end
end

--- The rows of CSV text given line by line: next_line() returns a line
-- without its "\n" (a "\r" before it kept), or nil at the end. Returns an
-- iterator of rows { cells..., quoted = {bool...}, line = its first line
-- number, lines = physical lines } or, for a malformed row, { line =,
-- lines =, what = } (reading goes on after it). Blank lines are skipped;
-- a UTF-8 byte order mark before the first row is dropped; a quoted cell
-- keeps its line breaks as they are. A row longer than max_row bytes (with
-- a quote still open) ends as malformed.
function M.rows(next_line, max_row)
  max_row = max_row or (1 << 20)
  local lineno = 0
  return function()
    while true do
      local text = next_line()
      if text == nil then return nil end
      lineno = lineno + 1
      if lineno == 1 and text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
      local start, lines = lineno, 1
      local cells, quoted, open = split_row(text:gsub("\r$", ""))
      while open and #text <= max_row do
        local more = next_line()
        if more == nil then break end
        lineno, lines = lineno + 1, lines + 1
        text = text .. "\n" .. more
        cells, quoted, open = split_row((text:gsub("\r$", "")))
      end
      if open then return { line = start, lines = lines, what = "quoted field never closed" } end
      if not cells then return { line = start, lines = lines, what = quoted } end
      if not (#cells == 1 and cells[1] == "" and not quoted[1]) then
        cells.quoted, cells.line, cells.lines = quoted, start, lines
        return cells
      end
    end
  end
end

-- A cell as a {name, value} pair for the store: quoted cells are strings,
-- an empty unquoted cell is absent (nil), any other unquoted cell goes as
-- its text, read by the store as a record line's value is ("token").
local function cell_pair(name, text, quoted)
  if quoted then return { name, text } end
  if text == "" then return nil end
  return { name, text, "token" }
end

-- A CSV file's rows for files.set_reader: a header, then records; nil and
-- "path:line: what" for the first row that is wrong.
local function csv_rows(next_line, _, path)
  local rows = M.rows(next_line)
  -- comment lines ('#' first) before the header are skipped, as the
  -- command's reader skips them
  local header = rows() or {}
  while not header.what and (header[1] or ""):match("^%s*#") do header = rows() or {} end
  if header.what then return nil, ("%s:%d: %s"):format(path, header.line, header.what) end
  local cols, seen = {}, {}
  for i, name in ipairs(header) do
    if name == "" then return nil, ("%s:%d: column %d has no name"):format(path, header.line, i) end
    if seen[name] then return nil, ("%s:%d: column '%s' appears twice"):format(path, header.line, name) end
    seen[name] = true
    cols[i] = name
  end
  local out, lines = {}, {}
  for row in rows do
    if row.what then return nil, ("%s:%d: %s"):format(path, row.line, row.what) end
    if #row ~= #cols then
      local report = require "phaseprobe.output.report"
      return nil, ("%s:%d: %s, the header has %s"):format(path, row.line,
        report.count(#row, "field"), report.num(#cols))
    end
    local pairs_ = {}
    for i, cell in ipairs(row) do pairs_[#pairs_ + 1] = cell_pair(cols[i], cell, row.quoted[i]) end
    out[#out + 1] = pairs_
    lines[#out] = row.line
  end
  return out, lines
end

-- The file is read a line at a time (files.set_reader): what it holds at
-- once is one row of at most 1 MiB, besides the records made; a read error
-- is the message.
M.read_csv = files.set_reader("export.read_csv", csv_rows)

return M
