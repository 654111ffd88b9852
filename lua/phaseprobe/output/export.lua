-- phaseprobe.output.export: records out of Lua, into tools people already use.
--
--   export.trace(set, path [, opts])   Chrome trace-event JSON (Perfetto UI,
--                                      chrome://tracing); opts.name: process name
--   export.trace_runs(runs, path [, stream])
--                                      the same, one process per run:
--                                      runs = { {name = string, set = records}, ... }
--   export.trace_text(runs)            -> the trace as a string
--   export.csv(set, path [, stream])   one row per record, header first
--   export.jsonl(set, path [, stream]) one JSON object per record and line
--   export.read_csv(path [, opts])     -> records, or nil, "path:line: what"
--   export.read_jsonl(path [, opts])   -> records, or nil, "path:line: what"
--                                      (opts.prefix: the prefix they print with;
--                                      opts.max_bytes: the largest file read,
--                                      default M.MAX_BYTES = 8 GiB)
--
-- `set` is a record set object or a plain array of records (see
-- recview.collect). `path` is a file name, or "-" for standard output (or
-- for `stream` when given). Writers return true, or nil and a message when
-- the file cannot be written; misuse (not a set, a value no format can hold)
-- raises, naming record and field. Records read back carry r._fields (the
-- columns or keys in file order) and r._prefix, and print as their line.
--
-- Numbers. Records hold u64 values in Lua integers (values above 2^63-1
-- wrap to negative, as the C module pushes them); every integer is written
-- as its exact unsigned decimal. Debian's lua-cjson 2.1.0 formats every
-- number with at most 14 significant digits, so it would round any value
-- from 10^14 up (every CLOCK_MONOTONIC start_ns after about a day of
-- uptime): cjson escapes and writes every string and decodes every line we
-- read, and the digits of integers are placed by this module. Values from
-- 2^53 up are exact in the file (DuckDB and pandas read them as 64-bit
-- integers); JavaScript readers see them rounded. In trace args, values past
-- 2^63-1 are written as strings (trace readers parse integers as int64).
-- The readers here take integer digits from the text, so they round-trip
-- exactly up to 2^64-1; floats are written with 17 significant digits and
-- a decimal point, so they come back as the same floats.
--
-- CSV follows RFC 4180 with one convention: strings are always quoted and
-- numbers never are (Python's QUOTE_NONNUMERIC), so a tag value "128" stays
-- a string when read back. An empty unquoted cell is an absent field.
local recview = require "phaseprobe.recview"
local cjson = require("cjson").new() -- own instance: no global settings touched

local M = {}

local u64_text = recview.u64_text

------------------------------------------------------------------------------
-- value text and a small JSON writer
------------------------------------------------------------------------------

local function where_text(where)
  return where and (where .. ": ") or ""
end

local function number_text(v, where)
  if math.type(v) == "integer" then return u64_text(v) end
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
      -- u64 values past 2^63-1 (negative here) overflow the int64 that trace
      -- readers parse integers into: they go in as strings of their digits
      out[#out + 1] = v >= 0 and tostring(v) or ('"' .. u64_text(v) .. '"')
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

local function bad_value(v, i, k)
  error(("record %d, field '%s': a %s value; records hold integers and strings"):format(i, k, type(v)), 0)
end

local function where_field(i, k) return ("record %d, field '%s'"):format(i, k) end

-- One record as a JSON object whose keys come in line order. With
-- big_as_string, u64 values past 2^63-1 are written as strings (trace args).
local function record_json(r, i, big_as_string)
  local out, n = { "{" }, 1
  for j, k in ipairs(recview.ordered_keys(r)) do
    local v = r[k]
    if j > 1 then
      n = n + 1
      out[n] = ","
    end
    out[n + 1] = key_cache[k]
    n = n + 2
    if type(v) == "string" then
      out[n] = cjson.encode(v)
    elseif math.type(v) == "integer" and v >= 0 then
      out[n] = tostring(v)
    elseif math.type(v) == "integer" and big_as_string then
      out[n] = '"' .. u64_text(v) .. '"'
    elseif type(v) == "number" then
      out[n] = number_text(v, where_field(i, k))
    else
      bad_value(v, i, k)
    end
  end
  out[n + 1] = "}"
  return table.concat(out)
end

------------------------------------------------------------------------------
-- files
------------------------------------------------------------------------------

-- Opens `path` for writing ("-" is stdout). Returns a writer object with
-- write(s) and close() -> true | nil, message.
local function open_out(path, what, stream)
  if type(path) ~= "string" or path == "" then
    error(what .. ": expected an output path (a string, or \"-\" for stdout)", 3)
  end
  local f, err
  if path == "-" then
    f = stream or io.stdout
  else
    f, err = io.open(path, "wb")
    if not f then return nil, ("%s: cannot write '%s': %s"):format(what, path, err) end
  end
  local w = { failed = nil }
  function w.write(s)
    if w.failed then return end
    local ok, e = f:write(s)
    if not ok then w.failed = e end
  end
  function w.close()
    local ok, e = true, nil
    if path ~= "-" then
      ok, e = f:close()
    else
      ok, e = f:flush()
    end
    if w.failed or not ok then
      return nil, ("%s: writing '%s' failed: %s"):format(what, path, tostring(w.failed or e))
    end
    return true
  end
  return w
end

M.MAX_BYTES = 8 << 30

-- A whole file, read in chunks up to max_bytes: text, or nil and a message
-- (unreadable, a directory, larger than the cap).
local function slurp(path, what, max_bytes)
  if type(path) ~= "string" then
    error(what .. ": expected a file path", 3)
  end
  local cap = math.tointeger(max_bytes) or M.MAX_BYTES
  if cap < 1 then error(what .. ": option max_bytes must be a positive integer", 3) end
  local f, err = io.open(path, "rb")
  if not f then return nil, ("%s: cannot read '%s': %s"):format(what, path, err) end
  local parts, n, msg = {}, 0, nil
  while true do
    local chunk, rerr = f:read(1 << 16)
    if not chunk then
      if rerr then msg = ("%s: cannot read '%s': %s"):format(what, path, tostring(rerr)) end
      break
    end
    n = n + #chunk
    if n > cap then
      msg = ("%s: '%s' is larger than %d bytes (the option max_bytes raises the limit)"):format(what, path, cap)
      break
    end
    parts[#parts + 1] = chunk
  end
  f:close()
  if msg then return nil, msg end
  return table.concat(parts)
end

------------------------------------------------------------------------------
-- JSON lines
------------------------------------------------------------------------------

function M.jsonl(set, path, stream)
  local records = recview.collect(set, "export.jsonl")
  local lines = {}
  for i, r in ipairs(records) do lines[i] = record_json(r, i) end
  local w, err = open_out(path, "export.jsonl", stream)
  if not w then return nil, err end
  for _, l in ipairs(lines) do
    w.write(l)
    w.write("\n")
  end
  return w.close()
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

local function number_from_token(tok)
  if tok:match("^%-?%d+$") then return recview.parse_int(tok) end
  return tonumber(tok)
end

-- opts.prefix: the prefix the records print with (the default schema's
-- unless given; JSON lines do not carry it).
function M.read_jsonl(path, opts)
  opts = opts or {}
  local text, err = slurp(path, "export.read_jsonl", opts.max_bytes)
  if not text then return nil, err end
  local prefix = opts.prefix or recview.DEFAULT_PREFIX
  local out, lineno = {}, 0
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    lineno = lineno + 1
    if line:find("%S") then
      local ok, obj = pcall(cjson.decode, line)
      if not ok then
        return nil, ("%s:%d: not JSON: %s"):format(path, lineno, tostring(obj):gsub("^.-: ", ""))
      end
      if type(obj) ~= "table" or line:match("^%s*%[") then
        return nil, ("%s:%d: expected a JSON object (one record per line)"):format(path, lineno)
      end
      local keys, raw = scan_object(line)
      if not keys then
        return nil, ("%s:%d: field '%s': nested values are not record fields"):format(path, lineno, raw)
      end
      local r = {}
      for _, k in ipairs(keys) do
        local v = obj[k]
        if type(v) == "number" then
          v = number_from_token(raw[k])
          if v == nil then
            return nil, ("%s:%d: field '%s': %s does not fit in 64 bits"):format(path, lineno, k, raw[k])
          end
        elseif type(v) ~= "string" then
          -- null, true, false: not something a record holds
          return nil, ("%s:%d: field '%s': %s is not an integer or a string"):format(path, lineno, k,
            raw[k] or type(v))
        end
        r[k] = v
      end
      out[#out + 1] = setmetatable(r, recview.record_mt(prefix, keys))
    end
  end
  return out
end

------------------------------------------------------------------------------
-- CSV
------------------------------------------------------------------------------

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
  local w, err = open_out(path, "export.csv", stream)
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
  local text, err = slurp(path, "export.read_csv", opts.max_bytes)
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

------------------------------------------------------------------------------
-- Chrome trace-event JSON
------------------------------------------------------------------------------

local PHASE_LAYOUT = "Phases are a partition of charged host time, not a record of when each ran: "
  .. "within a dispatch they are laid end to end from its start in schema order, then an "
  .. "'unattributed' slice holds the residue (wall_ns - named_host_ns). Nested regions (sub_*) "
  .. "are laid end to end inside the phase they were measured in. Zero-length phases are left out."
local DEVICE_LAYOUT = "Device slices have their measured durations (device_window_ns, kernel_ns); "
  .. "their positions are modelled: the outer window starts where its start event is recorded "
  .. "(the end of the stage phase), the kernel window at the start of the launch phase, both kept "
  .. "inside the dispatch where they fit."
local END_TO_END = "No absolute start times (start_ns absent or 0): dispatches are laid end to end "
  .. "per thread in record order; gaps between dispatches are not known."
local ABSOLUTE = "Dispatches start at their recorded start_ns, relative to the run's first "
  .. "(time_base_ns)."
local TOO_WIDE = "start_ns values span more than 2^50 ns (13 days), too wide for exact microsecond "
  .. "timestamps: dispatches are laid end to end per thread in record order instead."

-- Timestamps are written in microseconds with three decimals and read back
-- as doubles: a run must stay within 2^50 ns of its first dispatch for them
-- to keep every nanosecond.
local MAX_SPAN = 1 << 50

local DEVICE_TID_BASE = 1000000000

local function phase_offsets(r, L)
  -- offsets (ns from the dispatch start) and durations of each phase, laid end
  -- to end in schema order
  local at, list = 0, {}
  for _, p in ipairs(L.phases) do
    local d = recview.u(r, p)
    list[#list + 1] = { label = p, at = at, dur = d }
    at = recview.sat_add(at, d)
  end
  return list, at
end

-- Where the device window and the kernel window start, as offsets from the
-- dispatch start: after "stage" and at "launch" where the schema has them.
local function device_offsets(phases)
  local after_stage, launch
  for _, ph in ipairs(phases) do
    if ph.label == "stage_ns" then after_stage = ph.at + ph.dur end
    if ph.label == "launch_ns" then launch = ph.at end
  end
  return after_stage or 0, launch
end

local function clamp(v, lo, hi)
  if hi < lo then return lo end
  if v < lo then return lo end
  if v > hi then return hi end
  return v
end

-- A run's records with their tracks and start times.
local function plan_run(records)
  local absolute = #records > 0
  for _, r in ipairs(records) do
    if recview.u(r, "start_ns") == 0 then
      absolute = false
      break
    end
  end
  local order = {}
  for i = 1, #records do order[i] = i end
  local base = 0
  if absolute then
    table.sort(order, function(a, b)
      local sa, sb = recview.u(records[a], "start_ns"), recview.u(records[b], "start_ns")
      if sa ~= sb then return sa < sb end
      return a < b
    end)
    base = recview.u(records[order[1]], "start_ns")
    local last = recview.u(records[order[#order]], "start_ns")
    if last - base > MAX_SPAN then
      local o = {}
      for i = 1, #records do o[i] = i end
      return { absolute = false, order = o, base = 0, too_wide = true }
    end
  end
  return { absolute = absolute, order = order, base = base }
end

-- A dispatch's args: the whole record (keys in line order), then `extra`.
local function record_args(r, i, extra)
  local text = record_json(r, i, true)
  local more = {}
  for _, k in ipairs { "shifted_ns", "note" } do
    if extra[k] ~= nil then more[#more + 1] = key_cache[k] .. encode(extra[k]) end
  end
  if #more > 0 then text = text:sub(1, -2) .. (#text > 2 and "," or "") .. table.concat(more, ",") .. "}" end
  return raw(text)
end

-- Emits the events of one run through `emit(event)`; returns its metadata.
local function run_events(run, pid, tids, emit)
  local records = recview.collect(run.set, "export.trace")
  local plan = plan_run(records)
  emit { name = "process_name", ph = "M", pid = pid, args = { name = run.name } }
  emit { name = "process_sort_index", ph = "M", pid = pid, args = { sort_index = pid } }
  emit { name = "process_labels", ph = "M", pid = pid,
    args = { labels = plan.absolute and "absolute start times" or "dispatches laid end to end" } }

  local tracks = {} -- host tid -> { tid =, dev =, ker =, host_end =, dev_end =, ker_end = }
  local ntracks = 0
  local shifted = 0
  local function track(r)
    local real = recview.u(r, "tid")
    local t = tracks[real]
    if t then return t end
    ntracks = ntracks + 1
    local tid = real
    if tids.used[tid] then -- the same thread id in another run: keep tracks apart
      tids.next = tids.next + 1
      tid = tids.next
    end
    tids.used[tid] = true
    tids.next = tids.next + 1
    local dev = tids.next
    tids.next = tids.next + 1
    local ker = tids.next
    t = { tid = tid, dev = dev, ker = ker, host_end = 0, dev_end = 0, ker_end = 0 }
    tracks[real] = t
    local label = real ~= 0 and ("host thread " .. real) or "host thread (tid not recorded)"
    emit { name = "thread_name", ph = "M", pid = pid, tid = tid, args = { name = label } }
    emit { name = "thread_name", ph = "M", pid = pid, tid = dev,
      args = { name = "device window (" .. label .. ")" } }
    emit { name = "thread_name", ph = "M", pid = pid, tid = ker,
      args = { name = "kernel only (" .. label .. ")" } }
    emit { name = "thread_sort_index", ph = "M", pid = pid, tid = tid, args = { sort_index = 3 * ntracks } }
    emit { name = "thread_sort_index", ph = "M", pid = pid, tid = dev, args = { sort_index = 3 * ntracks + 1 } }
    emit { name = "thread_sort_index", ph = "M", pid = pid, tid = ker, args = { sort_index = 3 * ntracks + 2 } }
    return t
  end

  for _, i in ipairs(plan.order) do
    local r = records[i]
    local L = recview.layout(r)
    local t = track(r)
    local phases, named = phase_offsets(r, L)
    local wall = r.wall_ns ~= nil and recview.u(r, "wall_ns") or named
    local dur = math.max(wall, named)
    local start
    if plan.absolute then
      start = recview.u(r, "start_ns") - plan.base
      if start < t.host_end then
        shifted = shifted + 1
        start = t.host_end
      end
    else
      start = t.host_end
    end
    t.host_end = recview.sat_add(start, dur)

    local extra = {}
    if r.start_ns ~= nil and plan.absolute and start ~= recview.u(r, "start_ns") - plan.base then
      extra.shifted_ns = start - (recview.u(r, "start_ns") - plan.base)
    end
    if named > wall then extra.note = "named phases exceed wall_ns: the slice is as long as their sum" end
    emit { name = "dispatch", cat = "host", ph = "X", pid = pid, tid = t.tid, ts = us(start), dur = us(dur),
      args = record_args(r, i, extra) }

    for _, ph in ipairs(phases) do
      if ph.dur > 0 then
        emit { name = recview.phase_short(ph.label), cat = "phase", ph = "X", pid = pid, tid = t.tid,
          ts = us(start + ph.at), dur = us(ph.dur), args = { [ph.label] = ph.dur } }
        -- nested regions measured inside this phase, end to end from its start
        local at = 0
        for _, n in ipairs(L.nested) do
          local nd = recview.u(r, n)
          if L.parent[n] == ph.label and nd > 0 then
            local d = math.min(nd, ph.dur - at)
            if d > 0 then
              local nargs = { [n] = nd }
              if d < nd then nargs.note = "clipped to the enclosing phase" end
              emit { name = n:gsub("_ns$", ""), cat = "nested", ph = "X", pid = pid, tid = t.tid,
                ts = us(start + ph.at + at), dur = us(d), args = nargs }
              at = at + d
            end
          end
        end
      end
    end
    if dur > named then
      emit { name = "unattributed", cat = "phase", ph = "X", pid = pid, tid = t.tid,
        ts = us(start + named), dur = us(dur - named), args = { unattributed_ns = dur - named } }
    end

    -- device tracks
    local window, kernel = recview.u(r, "device_window_ns"), recview.u(r, "kernel_ns")
    local after_stage, launch_at = device_offsets(phases)
    local dstart
    if window > 0 then
      dstart = start + clamp(after_stage, 0, dur - window)
      dstart = math.max(dstart, t.dev_end)
      t.dev_end = dstart + window
      emit { name = "device window", cat = "device", ph = "X", pid = pid, tid = t.dev, ts = us(dstart),
        dur = us(window), args = { device_window_ns = window, kernel_ns = kernel,
          starvation_ns = math.max(0, window - kernel), seq = r.seq } }
    end
    if kernel > 0 then
      local kstart
      if dstart then
        kstart = clamp(start + (launch_at or after_stage), dstart, dstart + window - kernel)
      else
        kstart = start + clamp(launch_at or 0, 0, dur - kernel)
      end
      kstart = math.max(kstart, t.ker_end)
      t.ker_end = kstart + kernel
      emit { name = "kernel", cat = "device", ph = "X", pid = pid, tid = t.ker, ts = us(kstart),
        dur = us(kernel), args = { kernel_ns = kernel, kernel_src = r.kernel_src,
          kernel_floor_ns = r.kernel_floor_ns, seq = r.seq } }
    end
  end
  return {
    pid = pid,
    name = run.name,
    records = #records,
    timestamps = plan.absolute and "absolute" or "end_to_end",
    time_base_ns = plan.absolute and plan.base or nil,
    note = plan.absolute and ABSOLUTE or plan.too_wide and TOO_WIDE or END_TO_END,
    shifted = shifted > 0 and shifted or nil,
  }
end

local function check_runs(runs)
  if type(runs) ~= "table" or #runs == 0 then
    error("export.trace_runs: expected a list of runs { {name=, set=}, ... }", 3)
  end
  for i, run in ipairs(runs) do
    if type(run) ~= "table" or type(run.name) ~= "string" or type(run.set) ~= "table" then
      error(("export.trace_runs: run %d must be { name = string, set = records }"):format(i), 3)
    end
  end
end

local function version()
  local ok, pp = pcall(require, "phaseprobe")
  return ok and type(pp) == "table" and pp.version or "unknown"
end

-- Slice and category names: few, and on every event.
local name_cache = setmetatable({}, { __index = function(t, k)
  local e = cjson.encode(k)
  rawset(t, k, e)
  return e
end })

-- A complete ("X") event; the same text encode() makes, without its
-- general walk (the trace is mostly these).
local function encode_slice(ev)
  return table.concat { '{"args":', encode(ev.args or {}, "trace event"), ',"cat":', name_cache[ev.cat],
    ',"dur":', us_text(ev.dur.ns), ',"name":', name_cache[ev.name], ',"ph":"X","pid":', tostring(ev.pid),
    ',"tid":', tostring(ev.tid), ',"ts":', us_text(ev.ts.ns), "}" }
end

-- The trace as text, produced piecewise through `write`.
local function write_trace(runs, write)
  write('{"traceEvents":[\n')
  local first = true
  local tids = { used = {}, next = DEVICE_TID_BASE }
  local metas = array()
  for pid, run in ipairs(runs) do
    metas[#metas + 1] = run_events(run, pid, tids, function(ev)
      if not first then write(",\n") end
      first = false
      write(ev.ph == "X" and encode_slice(ev) or encode(ev, "trace event"))
    end)
  end
  local meta = {
    phaseprobe = {
      format = "phaseprobe-trace/1",
      version = version(),
      units = "ts and dur are microseconds with three decimals: exact nanoseconds; args hold "
        .. "exact integers, and u64 values above 2^63-1 (saturated counters) as strings of their digits",
      phase_layout = PHASE_LAYOUT,
      device_layout = DEVICE_LAYOUT,
      runs = metas,
    },
  }
  write('\n],\n"metadata":')
  write(encode(meta, "trace metadata"))
  write("}\n")
end

function M.trace_runs(runs, path, stream)
  check_runs(runs)
  local w, err = open_out(path, "export.trace", stream)
  if not w then return nil, err end
  local ok, e = pcall(write_trace, runs, w.write)
  if not ok then
    w.close()
    error(e, 0)
  end
  return w.close()
end

-- opts.name: the process name (default "phaseprobe").
function M.trace(set, path, opts)
  opts = opts or {}
  recview.collect(set, "export.trace")
  return M.trace_runs({ { name = opts.name or "phaseprobe", set = set } }, path)
end

-- The trace document as a string (for callers that want it in memory).
function M.trace_text(runs)
  check_runs(runs)
  local out = {}
  write_trace(runs, function(s) out[#out + 1] = s end)
  return table.concat(out)
end

M._encode = encode -- for the specs

return M
