-- phaseprobe.output.files: the files the exporters write and read.
--
--   files.open_out(path, what [, stream]) -> writer {write(s), close()} |
--                                         nil, message   ("-": stdout or stream)
--   files.slurp(path, what [, max_bytes]) -> text | nil, message
--   files.MAX_BYTES                       the largest file read (8 GiB)
--   files.write_lines(path, what, stream, lines) -> true | nil, message
--   files.to_set(rows, path, lines [, prefix]) -> record set | nil, message
--
-- Used by output/json.lua, output/csv.lua and output/trace.lua: records
-- leave Lua through open_out and come back through slurp. `what` names the
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

-- A whole file, read in chunks up to max_bytes: text, or nil and a message
-- (unreadable, a directory, larger than the cap).
function M.slurp(path, what, max_bytes)
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
