-- phaseprobe.output.files: the files the exporters write and read.
--
--   files.open_out(path, what [, stream]) -> writer {write(s), close()} |
--                                         nil, message   ("-": stdout or stream)
--   files.lines(path, what [, max_bytes]) -> next_line, state | nil, message
--   files.MAX_BYTES                       the largest file read (8 GiB)
--   files.MAX_LINE                        the longest line lines() reads (1 MiB)
--   files.write_lines(path, what, stream, lines) -> true | nil, message
--   files.to_set(rows, path, lines [, prefix]) -> record set | nil, message
--
-- Used by output/json.lua, output/csv.lua and output/trace.lua: records
-- leave Lua through open_out and come back through lines. `what` names the
-- caller in messages ("export.csv: cannot write 'x': ...").
local pp = require "phaseprobe"
local records = require "phaseprobe.records"

local M = {}

-- Opens `path` for writing ("-" is stdout). Returns a writer object with
-- write(s) and close() -> true | nil, message.
function M.open_out(path, what, stream)
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

M.MAX_LINE = 1 << 20

local function too_large(what, path, cap)
  return ("%s: '%s' is larger than %d bytes (the option max_bytes raises the limit)"):format(what, path, cap)
end

-- A file read a line at a time, in chunks: the memory it takes is one
-- chunk and one line, whatever the file holds. Returns next_line and a
-- state table, or nil and a message (unreadable, larger than the cap by
-- its size). next_line() gives each line without its "\n" (the last one
-- also when unterminated), then nil: at the end, or when reading failed,
-- the total passed max_bytes or a line passed MAX_LINE bytes, and then
-- state.err holds the message ("what: path:LINE: ..." for a line).
-- state.line is the number of the line last given. The file is closed at
-- the end, or when state is closed (local s <close> = state), whichever
-- comes first.
function M.lines(path, what, max_bytes)
  if type(path) ~= "string" then
    error(what .. ": expected a file path", 3)
  end
  local cap = math.tointeger(max_bytes) or M.MAX_BYTES
  if cap < 1 then error(what .. ": option max_bytes must be a positive integer", 3) end
  local f, err = io.open(path, "rb")
  if not f then return nil, ("%s: cannot read '%s': %s"):format(what, path, err) end
  -- (a directory opens, and fails its first read)
  local first, rerr = f:read(1 << 16)
  if first == nil and rerr then
    f:close()
    return nil, ("%s: cannot read '%s': %s"):format(what, path, tostring(rerr))
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
  local state = setmetatable({ line = 0 }, { __close = function()
    if f then f:close() end
    f = nil
  end })
  local buf, pos, total = first or "", 1, first and #first or 0
  if total > cap then
    f:close()
    return nil, too_large(what, path, cap)
  end
  local function fail(msg)
    state.err = msg
    buf, pos = "", 1
    if f then f:close() end
    f = nil
    return nil
  end
  local function next_line()
    while true do
      local nl = buf:find("\n", pos, true)
      if nl and nl - pos > M.MAX_LINE then
        return fail(("%s: %s:%d: a line longer than %d bytes"):format(what, path, state.line + 1, M.MAX_LINE))
      end
      if nl then
        local line = buf:sub(pos, nl - 1)
        pos = nl + 1
        state.line = state.line + 1
        return line
      end
      local left = #buf - pos + 1
      if left > M.MAX_LINE then
        return fail(("%s: %s:%d: a line longer than %d bytes"):format(what, path, state.line + 1, M.MAX_LINE))
      end
      if not f then
        if left == 0 then return nil end
        local line = buf:sub(pos)
        buf, pos = "", 1
        state.line = state.line + 1
        return line
      end
      local chunk, rerr = f:read(1 << 16)
      if chunk == nil then
        if rerr then return fail(("%s: cannot read '%s': %s"):format(what, path, tostring(rerr))) end
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

return M
