-- phaseprobe.output.json: records as JSON lines, and the JSON text the
-- trace writer shares.
--
--   json.jsonl(set, path [, stream [, opts]])
--                                     one JSON object per record and line
--                                     (streamed; opts.progress(done, total))
--   json.read_jsonl(path [, opts])    -> records, or nil, "path:line: what"
--                                     (opts.prefix: the prefix they print with;
--                                     opts.max_bytes: the largest file read,
--                                     default files.MAX_BYTES = 8 GiB; a line
--                                     holds at most files.MAX_LINE = 1 MiB)
--   json.encode(v, where)             a Lua value as JSON text
--   json.record_json(r, i [, big_as_string])
--                                     one record as an object, keys in line order
--   json.number_text(v, where)        an integer or float as exported text
--
-- Sits after the record sets in the flow, beside output/csv.lua and
-- output/trace.lua (whose events output/trace_events.lua builds with
-- encode, number_text and value_text).
--
-- `set` is a record set (phaseprobe.records). `path` is a file name, or "-"
-- for standard output (or for `stream` when given). Writers return true, or
-- nil and a message when the file cannot be written; misuse (not a set, a
-- value no format can hold) raises, naming record and field. Readers return
-- a record set whose records carry @file = the path and @line = the line.
--
-- Numbers. A record's numbers are written as its line prints them
-- (r:_text): integers as their exact decimal, u64 values above 2^63-1
-- (floats in Lua: see phaseprobe.record) included, floats as they were
-- written or as their shortest spelling ("3.0", "1e+20"), all of which are
-- JSON numbers (what the store holds as a number is written as JSON writes
-- one: pp_parse.h). Debian's lua-cjson 2.1.0 formats every number with
-- at most 14 significant digits, so it would round any value from 10^14 up
-- (every CLOCK_MONOTONIC start_ns after about a day of uptime): cjson
-- escapes and writes every string and decodes every line we read, and the
-- digits of numbers are placed by this module. Values from 2^53 up are exact
-- in the file (DuckDB and pandas read them as 64-bit integers); JavaScript
-- readers see them rounded. In trace args, values past 2^63-1 are written as
-- strings (trace readers parse integers as int64). The readers hand the
-- digits of every number to the store as text (pp.parse.list), so they
-- round-trip exactly up to 2^64-1, and every float comes back the same
-- float with the same text.
local records = require "phaseprobe.records"
local files = require "phaseprobe.output.files"
local cjson = require("cjson").new() -- own instance: no global settings touched

local M = {}

------------------------------------------------------------------------------
-- value text and a small JSON writer
------------------------------------------------------------------------------

local function where_text(where)
  return where and (where .. ": ") or ""
end

local function number_text(v, where)
  if math.type(v) == "integer" then return string.format("%d", v) end
  if v ~= v or v == math.huge or v == -math.huge then
    error(where_text(where) .. tostring(v) .. " cannot be written (JSON and CSV have no non-finite numbers)", 0)
  end
  local s = string.format("%.17g", v)
  if not s:find("[%.eEn]") then s = s .. ".0" end -- stays a float when read back
  return s
end

-- Marker metatables for the trace writer: arrays, and microsecond values
-- held as integer nanoseconds (written "123.456" exactly).
local ARRAY = {}
local US = {}
local RAW = {} -- JSON text already made
local function array(t) return setmetatable(t or {}, ARRAY) end
local function us(ns) return setmetatable({ ns = ns }, US) end
local function raw(text) return setmetatable({ text = text }, RAW) end

local function us_text(ns)
  return string.format("%d.%03d", ns // 1000, ns % 1000)
end

-- Field names repeat on every line: their encodings (with the colon) are kept.
local key_cache = setmetatable({}, { __index = function(t, k)
  local e = cjson.encode(k) .. ":"
  rawset(t, k, e)
  return e
end })

local encode
local function encode_into(v, out, where)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = cjson.encode(v)
  elseif t == "number" then
    if math.type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    else
      out[#out + 1] = number_text(v, where)
    end
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "table" then
    local mt = getmetatable(v)
    if mt == US then
      out[#out + 1] = us_text(v.ns)
    elseif mt == RAW then
      out[#out + 1] = v.text
    elseif mt == ARRAY or (rawlen(v) > 0) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode_into(v[i], out, where)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then
          error(where_text(where) .. "object key of type " .. type(k) .. " cannot be written as JSON", 0)
        end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = key_cache[k]
        encode_into(v[k], out, where)
      end
      out[#out + 1] = "}"
    end
  else
    error(where_text(where) .. "a " .. t .. " cannot be written as JSON", 0)
  end
end

function encode(v, where)
  local out = {}
  encode_into(v, out, where)
  return table.concat(out)
end

local function where_field(i, k) return ("record %d, field '%s'"):format(i, k) end

-- A number of record r as JSON or CSV text: the record's own text of it
-- (r:_text: the exact digits of an integer, u64 values above 2^63-1
-- included, and a float as it was written or as its shortest spelling);
-- with big_as_string, the digits of a u64 past 2^63-1 quoted (trace args).
local function value_text(r, i, k, v, big_as_string)
  if math.type(v) == "integer" then return string.format("%d", v) end
  local t = v - v == 0 and r:_text(k) -- (a non-finite float is refused)
  if not t then return number_text(v, where_field(i, k)) end
  if big_as_string and v >= 0x1p63 and t:match("^%d+$") then return '"' .. t .. '"' end
  return t
end

-- One record as a JSON object whose keys come in line order. With
-- big_as_string, u64 values past 2^63-1 are written as strings (trace args).
local function record_json(r, i, big_as_string)
  local out, n = { "{" }, 1
  for k, v in pairs(r) do
    if n > 1 then
      n = n + 1
      out[n] = ","
    end
    out[n + 1] = key_cache[k]
    n = n + 2
    if type(v) == "string" then
      out[n] = cjson.encode(v)
    else
      out[n] = value_text(r, i, k, v, big_as_string)
    end
  end
  out[n + 1] = "}"
  return table.concat(out)
end

--- The set argument of an exporter, or an error naming it.
function M.check_set(set, what)
  if not records.is_set(set) then
    local got = type(set)
    if got == "userdata" or got == "table" then got = tostring(getmetatable(set) and set or got) end
    error(("%s: expected a record set (phaseprobe.records; records.from_list makes one), got %s")
      :format(what, got), 3)
  end
  return set
end

------------------------------------------------------------------------------
-- the writers' walk over a set, a chunk at a time
------------------------------------------------------------------------------

--- Records per chunk of the CSV and JSON-lines writers.
M.CHUNK = 2048

--- The set's fields (its view, or those of its records) with, per field,
-- whether its values are strings (a column that holds a string holds
-- every value as its text: records.lua) -- and a refusal, before anything
-- is written, of a value no format can hold (a NaN or an infinity, which
-- only a set made with text = "any" can carry), naming record and field.
function M.export_fields(set, what)
  local cols = set:columns()
  local fields = set:fields()
  local stringy = {}
  for _, f in ipairs(fields) do
    local kind = cols:kind(f)
    stringy[f] = kind == "string"
    if kind == "number" then
      local s = cols:summary(f, set:selection())
      if (s.nan or 0) > 0 or s.min == -math.huge or s.max == math.huge then
        for i = 1, set:count() do
          local v = cols:get(set:row(i), f)
          if type(v) == "number" and v - v ~= 0 then
            error(("%s: %s: %s cannot be written (JSON and CSV have no non-finite numbers)")
              :format(what, where_field(i, f), tostring(v)), 0)
          end
        end
      end
    end
  end
  return fields, stringy
end

--- Calls fn(m, i0, texts, layouts, done) for each chunk of the set's
-- records, in order: m records from the i0-th; texts[f], the texts of
-- field f of the chunk's records that have it, in order (the exact texts
-- their lines print: cols:values(f, sel, "text")); layouts[j], the field
-- list of its j-th record in line order (r._fields; one table per layout,
-- whose members are the fields that record has).
function M.each_chunk(set, fields, fn)
  local cols = set:columns()
  local n = set:count()
  for i0 = 1, n, M.CHUNK do
    local m = math.min(M.CHUNK, n - i0 + 1)
    local rows = {}
    for j = 1, m do rows[j] = set:row(i0 + j - 1) end
    local sel = cols:select(rows)
    local layouts = {}
    for j = 1, m do layouts[j] = cols:row(rows[j])._fields end
    local texts = {}
    for _, f in ipairs(fields) do texts[f] = cols:values(f, sel, "text") end
    fn(m, i0, texts, layouts, i0 + m - 1)
  end
end

--- A function(T, m, out) that sets out[j], for j = 1..m, to a row's text:
-- the pieces joined, each a string (written as it is) or an index k (the
-- j-th text of T[k]). Made as Lua code, one concatenation a row (about
-- twice as fast as filling and joining a table); nil when a row has too
-- many pieces for one expression (the caller then joins them itself).
function M.row_maker(pieces)
  local merged = {}
  for _, p in ipairs(pieces) do
    local last = merged[#merged]
    if type(p) == "string" and type(last) == "string" then
      merged[#merged] = last .. p
    elseif p ~= "" then
      merged[#merged + 1] = p
    end
  end
  local src, used, nused = { "local T, m, out = ...\n" }, {}, 0
  for _, p in ipairs(merged) do
    if type(p) == "number" and not used[p] then
      used[p] = true
      nused = nused + 1
      src[#src + 1] = ("local t%d = T[%d]\n"):format(p, p)
    end
  end
  if #merged + nused > 230 or #merged == 0 then return nil end -- (Lua's 255 registers)
  src[#src + 1] = "for j = 1, m do out[j] = "
  for i, p in ipairs(merged) do
    src[#src + 1] = (i > 1 and " .. " or "") .. (type(p) == "number" and ("t%d[j]"):format(p)
      or ("%q"):format(p):gsub("\\\n", "\\n"))
  end
  src[#src + 1] = " end\n"
  return assert(load(table.concat(src), "=export row", "t", {}))
end

--- The rows of chunks whose records share one layout, through one row
-- maker a layout: rows = M.layout_rows(pieces_of, quote), then
-- rows(m, key, texts, fields, quoted, add). pieces_of(key) gives the
-- pieces of a layout's row (asked once per key); T[k] is the chunk's texts
-- of fields[k], each cell passed through quote where quoted[fields[k]].
-- Adds the chunk's text and returns true, or returns false when the
-- layout's row is too long for a maker (the caller joins the rows itself).
function M.layout_rows(pieces_of, quote)
  local makers, out, T = {}, {}, {} -- makers: per key, its maker or false
  return function(m, key, texts, fields, quoted, add)
    local make = makers[key]
    if make == nil then
      make = M.row_maker(pieces_of(key)) or false
      makers[key] = make
    end
    if not make then return false end
    for k, f in ipairs(fields) do
      local t = texts[f]
      if quoted[f] then
        local q = {}
        for j = 1, m do q[j] = quote(t[j]) end
        t = q
      end
      T[k] = t
    end
    make(T, m, out)
    add(table.concat(out, "", 1, m))
    return true
  end
end

--- A chunk_text for write_chunks that writes a row per record. A chunk
-- whose records share one layout goes through uniform(m, layout, texts,
-- add) (a layout_rows maker's; false when it wrote nothing); any other,
-- a record at a time: add(record(layout, texts, cur)), where cur[f] counts
-- the texts of field f that the records before it took (record advances
-- it for the fields it takes).
function M.chunk_rows(fields, uniform, record)
  return function(m, _, texts, layouts, add)
    if M.uniform(layouts, m) and uniform(m, layouts[1], texts, add) then return end
    local cur = {}
    for _, f in ipairs(fields) do cur[f] = 0 end
    for j = 1, m do add(record(layouts[j], texts, cur)) end
  end
end

--- Whether every record of a chunk has the same layout (one field list).
function M.uniform(layouts, m)
  local L = layouts[1]
  for j = 2, m do if layouts[j] ~= L then return false end end
  return true
end

--- A writer's stream: writes go out in batches of about 64 KiB. Returns
-- add(s), flush().
function M.batcher(write)
  local buf, nb, bytes = {}, 0, 0
  local function flush()
    if nb > 0 then
      write(table.concat(buf, "", 1, nb))
      nb, bytes = 0, 0
    end
  end
  local function add(s)
    nb = nb + 1
    buf[nb] = s
    bytes = bytes + #s
    if bytes >= 65536 then flush() end
  end
  return add, flush
end

--- Writes the set through open_out (path "-": stream or stdout), each
-- chunk's text made by chunk_text(m, i0, texts, layouts, add); first (a
-- header) before them. opts.progress(done, total) is called per chunk.
-- Returns true, or nil and a message when the file cannot be written.
function M.write_chunks(set, path, stream, what, fields, first, chunk_text, opts)
  local w, err = files.open_out(path, what, stream)
  if not w then return nil, err end
  local add, flush = M.batcher(w.write)
  local total = set:count()
  local progress = opts and opts.progress
  local ok, perr = pcall(function()
    if first then add(first) end
    M.each_chunk(set, fields, function(m, i0, texts, layouts, done)
      chunk_text(m, i0, texts, layouts, add)
      if progress then
        flush()
        progress(done, total)
      end
    end)
    flush()
  end)
  if not ok then
    w.close()
    error(perr, 0)
  end
  return w.close()
end

------------------------------------------------------------------------------
-- JSON lines
------------------------------------------------------------------------------

--- Writes one JSON object per record and line, keys in the record's line
-- order (a view's order for a set with a view), numbers as their records'
-- texts. Streams: a chunk of records at a time (M.CHUNK), so its memory
-- does not grow with the set. opts.progress(done, total): per chunk.
function M.jsonl(set, path, stream, opts)
  M.check_set(set, "export.jsonl")
  local fields, stringy = M.export_fields(set, "export.jsonl")
  local view = set._view
  -- per layout: its keys (the view's fields it has, for a set with a view)
  local keys_of = {}
  local function keys(L)
    local k = keys_of[L]
    if not k then
      if view then
        local has = {}
        for _, f in ipairs(L) do has[f] = true end
        k = {}
        for _, f in ipairs(view) do if has[f] then k[#k + 1] = f end end
      else
        k = L
      end
      keys_of[L] = k
    end
    return k
  end
  local parts = {}
  local rows = M.layout_rows(function(ks)
    local pieces = {}
    for q, f in ipairs(ks) do
      pieces[#pieces + 1] = (q == 1 and "{" or ",") .. key_cache[f]
      pieces[#pieces + 1] = q
    end
    pieces[#pieces + 1] = #ks == 0 and "{}\n" or "}\n"
    return pieces
  end, cjson.encode)
  return M.write_chunks(set, path, stream, "export.jsonl", fields, nil, M.chunk_rows(fields,
    function(m, L, texts, add)
      local ks = keys(L)
      return rows(m, ks, texts, ks, stringy, add)
    end,
    function(L, texts, cur)
      local np = 0
      for q, f in ipairs(keys(L)) do
        local c = cur[f] + 1
        cur[f] = c
        local t = texts[f][c]
        np = np + 1
        parts[np] = (q == 1 and "{" or ",") .. key_cache[f]
        np = np + 1
        parts[np] = stringy[f] and cjson.encode(t) or t
      end
      return np == 0 and "{}\n" or (table.concat(parts, "", 1, np) .. "}\n")
    end), opts)
end

-- The keys of a flat JSON object in text order with their raw number
-- tokens. cjson has already accepted the line, so only the shape of a valid
-- object needs following here: strings (with escapes), numbers, literals.
local function scan_object(line)
  local keys, raw = {}, {}
  local pos = line:find("{", 1, true) + 1
  local function skip_ws(p) return line:find("[^ \t\r\n]", p) or #line + 1 end
  local function string_end(p) -- p at the opening quote; returns index of the closing quote
    local q = p + 1
    while true do
      local c = line:find('[\\"]', q)
      if line:sub(c, c) == "\\" then q = c + 2 else return c end
    end
  end
  pos = skip_ws(pos)
  if line:sub(pos, pos) == "}" then return keys, raw end
  while true do
    local kend = string_end(pos)
    local key = cjson.decode(line:sub(pos, kend))
    pos = skip_ws(skip_ws(kend + 1) + 1) -- past ':'
    local c = line:sub(pos, pos)
    local vend
    if c == '"' then
      vend = string_end(pos)
    elseif c == "{" or c == "[" then
      return nil, key
    else
      vend = (line:find("[ \t\r\n,}]", pos) or #line + 1) - 1
      raw[key] = line:sub(pos, vend)
    end
    keys[#keys + 1] = key
    pos = skip_ws(vend + 1)
    if line:sub(pos, pos) == "}" then return keys, raw end
    pos = skip_ws(pos + 1) -- past ','
  end
end

--- One JSON line as a flat object: obj (decoded), keys (in text order) and
-- raw (the number tokens as written, by key); or nil and what is wrong
-- (not JSON, not an object, a nested value).
function M.fields(line)
  local ok, obj = pcall(cjson.decode, line)
  if not ok then return nil, "not JSON: " .. tostring(obj):gsub("^.-: ", "") end
  if type(obj) ~= "table" or line:match("^%s*%[") then
    return nil, "expected a JSON object (one record per line)"
  end
  local keys, raw = scan_object(line)
  if not keys then return nil, ("field '%s': nested values are not record fields"):format(raw) end
  return obj, keys, raw
end

-- A JSON-lines file's rows for files.set_reader: each line a flat object,
-- blank and comment lines skipped; nil and "path:line: what" for the first
-- line that is not one.
local function jsonl_rows(next_line, state, path)
  local rows, lines = {}, {}
  for line in next_line do
    local lineno = state.line
    line = line:gsub("\r$", "")
    -- (a comment line, '#' first, is no JSON: skipped, as the command's
    -- reader skips it)
    if line:find("%S") and not line:match("^%s*#") then
      local obj, keys, raw = M.fields(line)
      if not obj then return nil, ("%s:%d: %s"):format(path, lineno, keys) end
      local row = {}
      for j, k in ipairs(keys) do
        local v = obj[k]
        if type(v) == "number" then
          row[j] = { k, raw[k], true } -- the digits, read exactly by the store
        elseif type(v) == "string" then
          row[j] = { k, v }
        else
          -- null, true, false: not something a record holds
          return nil, ("%s:%d: field '%s': %s is not an integer or a string"):format(path, lineno, k,
            raw[k] or type(v))
        end
      end
      rows[#rows + 1] = row
      lines[#rows] = lineno
    end
  end
  return rows, lines
end

-- opts.prefix: the prefix the records print with (the default schema's
-- unless given; JSON lines do not carry it).
-- The file is read a line at a time (files.set_reader), each line at most
-- 1 MiB; a read error is the message.
M.read_jsonl = files.set_reader("export.read_jsonl", jsonl_rows)

M.encode = encode
M.record_json = record_json
M.number_text = number_text
M.value_text = value_text
M.key_text = function(k) return key_cache[k] end
M.array, M.us, M.raw, M.us_text = array, us, raw, us_text

return M
