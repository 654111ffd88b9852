-- phaseprobe.output.files: the files the exporters write and read.
--
--   files.check_path(path, what, role [, level])   the one rule for a path from Lua
--   files.open_out(path, what [, stream]) -> writer {write(s), close()} |
--                                         nil, message   ("-": stdout or stream)
--   files.slurp(path, what [, max_bytes]) -> text | nil, message
--   files.lines(path, what [, max_bytes]) -> next_line, state | nil, message
--   files.MAX_BYTES                       the largest file read (8 GiB)
--   files.MAX_LINE                        the longest line lines() reads (1 MiB)
--   files.format_of(path [, head])        -> "log" | "csv" | "jsonl"
--   files.format_of_text(head [, loose])  the same by content alone
--   files.write_lines(path, what, stream, lines) -> true | nil, message
--   files.to_set(rows, path, lines [, prefix]) -> record set | nil, message
--   files.set_reader(what, parse) -> function(path [, opts]) -> record set |
--                                         nil, message   (through lines, to_set)
--
-- Used by output/json.lua, output/csv.lua and output/trace.lua: records
-- leave Lua through open_out and come back through a set_reader (lines: a
-- line at a time; slurp reads a whole file). `what` names the caller in
-- messages ("export.csv: cannot write 'x': ...").
local pp = require "phaseprobe"
local records = require "phaseprobe.records"

local M = {}

--- The reason in a message of io.open or a file method, without the path
-- it starts with ("x.json: No such file or directory" -> "No such file or
-- directory"): the caller names the path once.
function M.reason(err, path)
  err = tostring(err)
  if path and err:sub(1, #path + 2) == path .. ": " then return err:sub(#path + 3) end
  return err
end

--- The one rule for a path given from Lua: a string that is not empty and
-- holds no NUL byte (a file name cannot: the C library would cut it there
-- and open another file). Misuse raises, naming the caller (`what`) and the
-- argument (`role`: "output", "input"): "export.csv: the output path
-- \"x\\0y\" holds a NUL byte (a file name cannot)". level: as error's,
-- counted from check_path's caller (default 2: its caller).
function M.check_path(path, what, role, level)
  level = (level or 2) + 1
  if type(path) ~= "string" or path == "" then
    error(("%s: expected %s path (a string)%s, got %s"):format(what,
      role == "output" and "an output" or ("a" .. (role:match("^[aeiou]") and "n " or " ") .. role),
      role == "output" and ', or "-" for stdout' or "",
      type(path) == "string" and "an empty string" or type(path)), level)
  end
  if path:find("\0", 1, true) then
    error(("%s: the %s path %q holds a NUL byte (a file name cannot)"):format(what, role, path), level)
  end
end

-- Opens `path` for writing ("-" is stdout). Returns a writer object with
-- write(s) and close() -> true | nil, message.
function M.open_out(path, what, stream)
  M.check_path(path, what, "output", 2)
  local f, err
  if path == "-" then
    f = stream or io.stdout
  else
    f, err = io.open(path, "wb")
    if not f then return nil, ("%s: cannot write '%s': %s"):format(what, path, M.reason(err, path)) end
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
      return nil, ("%s: writing '%s' failed: %s"):format(what, path, M.reason(w.failed or e, path))
    end
    return true
  end
  return w
end

M.MAX_BYTES = 8 << 30

-- ---- which format a file holds ----------------------------------------------

--- Bytes of a file that format_of looks at.
M.HEAD = 1 << 16

-- The cells of one CSV line: their count and whether each is a field name
-- (letters, digits, '_'; quoted or not); nil when a quote is left open.
local function csv_cells(line)
  local n, names, pos = 0, true, 1
  line = line:gsub("\r$", "")
  while true do
    local cell
    if line:sub(pos, pos) == '"' then
      local q = pos + 1
      local parts = {}
      while true do
        local e = line:find('"', q, true)
        if not e then return nil end
        parts[#parts + 1] = line:sub(q, e - 1)
        if line:sub(e + 1, e + 1) == '"' then q = e + 2 else pos = e + 1; break end
      end
      cell = table.concat(parts, '"')
      local c = line:find(",", pos, true)
      pos = c and c + 1 or #line + 2
    else
      local c = line:find(",", pos, true)
      cell = line:sub(pos, (c or #line + 1) - 1)
      pos = c and c + 1 or #line + 2
    end
    n = n + 1
    if not cell:match("^[%a_][%w_]*$") then names = false end
    if pos > #line + 1 then return n, names end
  end
end

-- The first lines of `head` that are neither blank nor comments ('#'
-- first), at most `k` of them (a byte order mark dropped).
local function first_lines(head, k)
  head = head:gsub("^\239\187\191", "")
  local out = {}
  for line in head:gmatch("([^\n]*)\n?") do
    if #out >= k then break end
    local t = line:match("^%s*(.-)%s*$")
    if t ~= "" and (t:sub(1, 1) ~= "#" or #out > 0) then out[#out + 1] = line end
  end
  return out
end

--- What the text `head` (a file's first bytes) holds, by content: "jsonl"
-- when its first line that is no comment ('#' first) or blank is a JSON
-- object, "csv" when that line is a header of two or more field-name cells
-- and the next is a row of as many cells, else "log". With loose, "csv"
-- and "jsonl" also for a header alone or a row of another width (what a
-- message may say the text looks like).
function M.format_of_text(head, loose)
  local lines = first_lines(head or "", 2)
  local l1 = lines[1]
  if not l1 then return "log" end
  if l1:match("^%s*{") then return "jsonl" end
  if l1:find("=", 1, true) or not l1:find(",", 1, true) then return "log" end
  local n, names = csv_cells(l1)
  if not (n and n >= 2 and names) then return "log" end
  if loose then return "csv" end
  local l2 = lines[2]
  if l2 and csv_cells(l2) == n then return "csv" end
  return "log"
end

-- The first bytes of a regular file (nil for a pipe, a device that cannot
-- seek, or a file that cannot be read: their content is not looked at).
local function head_of(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local ok, size = pcall(f.seek, f, "end")
  local head
  if ok and math.type(size) == "integer" and f:seek("set", 0) then head = f:read(M.HEAD) end
  f:close()
  return head
end

--- "log", "csv" or "jsonl" for an input: by the name's extension (.csv;
-- .jsonl or .ndjson; .log), else by content (format_of_text) of `head`,
-- the first bytes when the caller has read them, else those of the file
-- (a regular file only; "-", standard input, needs head).
function M.format_of(path, head)
  if type(path) == "string" and path:find("\0", 1, true) then
    M.check_path(path, "files.format_of", "input", 2)
  end
  if type(path) == "string" and path ~= "-" then
    local lower = path:lower()
    if lower:match("%.csv$") then return "csv" end
    if lower:match("%.jsonl$") or lower:match("%.ndjson$") then return "jsonl" end
    if lower:match("%.log$") then return "log" end
    if head == nil then head = head_of(path) end
  end
  return M.format_of_text(head)
end

-- What the readers (slurp, lines, a set_reader) check before they open a
-- file: the path (check_path's rule, raised at the reader's caller) and
-- max_bytes (a positive integer, default MAX_BYTES; raised one level
-- further out, where the option was given). Returns the cap.
local function input_cap(path, what, max_bytes)
  M.check_path(path, what, "input", 3)
  local cap = math.tointeger(max_bytes) or M.MAX_BYTES
  if cap < 1 then error(what .. ": option max_bytes must be a positive integer", 4) end
  return cap
end

local function too_large(what, path, cap)
  return ("%s: '%s' is larger than %s (the option max_bytes raises the limit)"):format(what,
    path, require("phaseprobe.output.report").count(cap, "byte"))
end

-- A whole file, read in chunks up to max_bytes: text, or nil and a message
-- (unreadable, a directory, larger than the cap). The path: check_path's
-- rule.
function M.slurp(path, what, max_bytes)
  local cap = input_cap(path, what, max_bytes)
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
      msg = too_large(what, path, cap)
      break
    end
    parts[#parts + 1] = chunk
  end
  f:close()
  if msg then return nil, msg end
  return table.concat(parts)
end

M.MAX_LINE = 1 << 20

-- lines(path, what, max_bytes): a file read a line at a time, in chunks:
-- the memory it takes is one chunk and one line, whatever the file holds.
-- Returns next_line and a state table, or nil and a message (unreadable, a
-- directory, larger than the cap by its size). next_line() gives each line
-- without its "\n" (the last one also when unterminated), then nil: at the
-- end, or when reading failed, the total passed max_bytes or a line passed
-- MAX_LINE bytes, and then state.err holds the message ("what:
-- path:LINE: ..." for a line). state.line is the number of the line last
-- given. The file is closed at the end, or when state is closed (local s
-- <close> = state), whichever comes first. The path: check_path's rule.
-- (open_lines reads it once input_cap has checked the arguments and given
-- the cap; a set_reader reads through it too.)
local function open_lines(path, what, cap)
  local f, err = io.open(path, "rb")
  if not f then return nil, ("%s: cannot read '%s': %s"):format(what, path, M.reason(err, path)) end
  -- (a directory opens, and fails its first read)
  local first, rerr = f:read(1 << 16)
  if first == nil and rerr then
    f:close()
    return nil, ("%s: cannot read '%s': %s"):format(what, path, M.reason(rerr, path))
  end
  -- a regular file says its size: one over the cap is refused unread
  local ok, size = pcall(f.seek, f, "end")
  if ok and math.type(size) == "integer" then
    if size > cap then
      f:close()
      return nil, too_large(what, path, cap)
    end
    f:seek("set", first and #first or 0)
  end
  local buf, pos, total = first or "", 1, first and #first or 0
  if total > cap then
    f:close()
    return nil, too_large(what, path, cap)
  end
  local state = setmetatable({ line = 0 }, { __close = function()
    if f then f:close() end
    f = nil
  end })
  local function fail(msg)
    state.err = msg
    buf, pos = "", 1
    if f then f:close() end
    f = nil
    return nil
  end
  local function too_long()
    return fail(("%s: %s:%d: a line longer than %s"):format(what, path, state.line + 1,
      require("phaseprobe.output.report").count(M.MAX_LINE, "byte")))
  end
  local function next_line()
    while true do
      local nl = buf:find("\n", pos, true)
      if nl and nl - pos > M.MAX_LINE then return too_long() end
      if nl then
        local line = buf:sub(pos, nl - 1)
        pos = nl + 1
        state.line = state.line + 1
        return line
      end
      local left = #buf - pos + 1
      if left > M.MAX_LINE then return too_long() end
      if not f then
        if left == 0 then return nil end
        local line = buf:sub(pos)
        buf, pos = "", 1
        state.line = state.line + 1
        return line
      end
      local chunk, cerr = f:read(1 << 16)
      if chunk == nil then
        if cerr then return fail(("%s: cannot read '%s': %s"):format(what, path, M.reason(cerr, path))) end
        f:close()
        f = nil
      else
        total = total + #chunk
        if total > cap then return fail(too_large(what, path, cap)) end
        buf, pos = buf:sub(pos) .. chunk, 1
      end
    end
  end
  return next_line, state
end

-- lines: input_cap's checks, then open_lines.
function M.lines(path, what, max_bytes)
  return open_lines(path, what, input_cap(path, what, max_bytes))
end

------------------------------------------------------------------------------

--- Writes each of `lines` and a newline to `path` (open_out's rules).
function M.write_lines(path, what, stream, lines)
  local w, err = M.open_out(path, what, stream)
  if not w then return nil, err end
  for _, l in ipairs(lines) do
    w.write(l)
    w.write("\n")
  end
  return w.close()
end

--- The rows a reader made from a file, as a record set: each row a list of
-- {name, value} pairs in file order ({name, text, true}: a number's digits,
-- read exactly), lines[i] its line in `path`. The records print with
-- `prefix` (default: the default schema's). nil, "path:line: what" for a
-- row the store refuses (a bad name, a number past 64 bits).
function M.to_set(rows, path, lines, prefix)
  local ok, cols = pcall(pp.parse.list, rows, { prefix = prefix or pp.default_schema().prefix,
    source = path, lines = lines, text = "any" })
  if not ok then return nil, tostring(cols) end
  return records.wrap(cols)
end

-- A set_reader's reading, lines' checks counted from here as if lines
-- were called by the reader.
local function read_set(path, what, opts, parse)
  opts = opts or {}
  local next_line, state = open_lines(path, what, input_cap(path, what, opts.max_bytes))
  if not next_line then return nil, state end
  local _ <close> = state
  local rows, lines = parse(next_line, state, path)
  if state.err then return nil, state.err end
  if not rows then return nil, lines end
  return M.to_set(rows, path, lines, opts.prefix)
end

--- A reader of record files, function(path [, opts]) -> record set, or
-- nil and a message: the file read a line at a time (lines, with
-- opts.max_bytes), parse(next_line, state, path) making the lines rows and
-- their line numbers (to_set's; the records print with opts.prefix) or
-- returning nil and a message. A read error (state.err: it ends the
-- lines) is the message when there is one. Misuse is raised as lines
-- raises it for the reader: the path at the reader, max_bytes at its
-- caller.
function M.set_reader(what, parse)
  return function(path, opts)
    local set, err = read_set(path, what, opts, parse)
    return set, err -- (no tail call: read_set's levels count this frame)
  end
end

return M
