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

local function read_all(path)
  local f, err = path == "-" and io.stdin or io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  if f ~= io.stdin then f:close() end
  return text
end

function C.run(args, ctx)
  local _, files = ctx.options(args, {})
  if #files == 0 then ctx.usage("no input: give one or more PTX files, or - for standard input") end
  local pp = require "phaseprobe"
  local scan = type(pp.ptx) == "table" and pp.ptx.scan
  if type(scan) ~= "function" then
    ctx.fail("pp.ptx.scan is not available in this build of the phaseprobe module")
  end
  for _, path in ipairs(files) do
    local text, err = read_all(path)
    if not text then ctx.fail(err) end
    local ok, res, msg = pcall(scan, text)
    local name = path == "-" and "(stdin)" or path
    if not ok then ctx.fail(name .. ": " .. tostring(res)) end
    if res == nil then ctx.fail(name .. ": " .. tostring(msg or "the scanner returned nothing")) end
    if #files > 1 then ctx.write("== ", name, "\n") end
    ctx.write(report.value(res), "\n")
  end
  return 0
end

return C
