-- files.lua: whole-file reads and writes, temporary files and folders, for
-- the specs (and the benchmarks that borrow spec helpers).
local M = {}

-- The whole file, or nil and why when it cannot be opened.
function M.read(path)
  local f, why = io.open(path, "rb")
  if not f then return nil, why end
  local s = f:read("a")
  f:close()
  return s
end

-- The whole file, or an error naming it.
function M.slurp(path) return assert(M.read(path)) end

-- Whether path can be opened for reading.
function M.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- What was written to an open file (io.tmpfile()), from its start; closes it.
function M.text_of(f)
  f:seek("set")
  local t = f:read("a")
  f:close()
  return t
end

function M.spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- A new temporary file holding content: a string, or a list of lines
-- (each ended by a newline). Returns its path.
function M.tmpfile(content)
  local path = os.tmpname()
  if type(content) == "table" then content = table.concat(content, "\n") .. "\n" end
  M.spit(path, content or "")
  return path
end

-- A new temporary file holding the lines of path whose numbers are listed
-- (in the file's order).
function M.excerpt(path, numbers)
  local want, keep, n = {}, {}, 0
  for _, i in ipairs(numbers) do want[i] = true end
  for l in io.lines(path) do
    n = n + 1
    if want[n] then keep[#keep + 1] = l end
  end
  return M.tmpfile(keep)
end

-- A new temporary folder: dir.path, dir:file(name) (a path in it) and
-- dir:remove(). With `keep` (a folder to write into instead, made when
-- missing), remove leaves it in place.
function M.tmpdir(keep)
  local path = keep
  if keep and keep ~= "" then
    os.execute("mkdir -p '" .. keep:gsub("'", "'\\''") .. "'")
  else
    local p = assert(io.popen("mktemp -d"))
    path = p:read("l")
    p:close()
  end
  return {
    path = path,
    file = function(self, name) return self.path .. "/" .. name end,
    remove = function(self)
      if self.path:match("^/tmp/tmp%.") then os.execute("rm -rf '" .. self.path .. "'") end
    end,
  }
end

return M
