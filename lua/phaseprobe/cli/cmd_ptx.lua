--- phaseprobe ptx: what the PTX scanner finds in PTX files.
local cli = require "phaseprobe.cli"
local report = require "phaseprobe.output.report"

local C = {
  summary = "scan PTX files (pp.ptx.scan): barriers, globals, entry points, size",
  usage = [[
usage: phaseprobe ptx FILE.ptx...

Runs the PTX scanner (phaseprobe.ptx.scan) over each file ("-" for standard
input) and prints what it returns.]],
}

-- A file ("-": standard input) as a string, up to `cap` bytes: text, or
-- nil and a message naming it (missing, a directory, too large).
local function read_input(path, cap)
  local name = path == "-" and "(stdin)" or path
  local f, err = io.stdin, nil
  if path ~= "-" then
    f, err = io.open(path, "rb")
    if not f then return nil, err or (name .. ": cannot open") end
  end
  local parts, n = {}, 0
  local result, msg
  while true do
    local chunk, rerr = f:read(1 << 16)
    if chunk == nil then
      if rerr then msg = name .. ": " .. tostring(rerr) end
      break
    end
    n = n + #chunk
    if n > cap then
      msg = ("%s: larger than %d bytes (the PTX scanner's limit on one input)"):format(name, cap)
      break
    end
    parts[#parts + 1] = chunk
  end
  if f ~= io.stdin then f:close() end
  if not msg then result = table.concat(parts) end
  return result, msg
end

function C.run(args, ctx)
  local _, files = ctx.options(args, {})
  if #files == 0 then ctx.usage("no input: give one or more PTX files, or - for standard input") end
  local pp = require "phaseprobe"
  local ptx = type(pp.ptx) == "table" and pp.ptx or {}
  local scan = ptx.scan
  if type(scan) ~= "function" then
    ctx.fail("pp.ptx.scan is not available in this build of the phaseprobe module")
  end
  local cap = math.tointeger(ptx.max_bytes) or (8 << 30)
  for _, path in ipairs(files) do
    local name = path == "-" and "(stdin)" or path
    local text, err = read_input(path, cap)
    if not text then ctx.fail(err) end
    local ok, res, msg = pcall(scan, text)
    if not ok then ctx.fail(name .. ": " .. tostring(res)) end
    if res == nil then ctx.fail(name .. ": " .. tostring(msg or "the scanner returned nothing")) end
    if #files > 1 then ctx.write("== ", name, "\n") end
    ctx.write(report.value(res), "\n")
  end
  return 0
end

return C
