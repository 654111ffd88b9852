-- command.lua: the phaseprobe command run in this process, on real streams
-- (temporary files) read back afterwards, and what its output looks like.
--
--   local command = require "helpers.command"
--   local rc, out, err = command.run("report", "examples/data/demo-h200.log")
--   local err = command.usage_error("report", "--bogus", "examples/data/demo-h200.log")
--   local columns, line = command.widest(out)
local cli = require "phaseprobe.cli"
local report = require "phaseprobe.output.report"
local text_of = require("helpers.files").text_of

local M = {}

-- The exit status, standard output and standard error of the command.
function M.run(...)
  local out, err = io.tmpfile(), io.tmpfile()
  local rc = cli.main({ ... }, out, err)
  -- --raw and --wide are the report module's settings: back to the default
  report.raw, report.wide = false, false
  return rc, text_of(out), text_of(err)
end

-- Runs the command, which must refuse its arguments as a usage error: exit
-- status 2 and nothing on standard output. Returns its standard error.
function M.usage_error(...)
  local assert = require "luassert"
  local rc, out, err = M.run(...)
  local argv = table.concat({ ... }, " ")
  assert.are.equal(2, rc, argv .. ": " .. err)
  assert.are.equal("", out, argv)
  return err
end

-- The width in characters of the widest line of text, and that line.
function M.widest(text)
  local w, at = 0, nil
  for l in text:gmatch("[^\n]+") do
    local n = utf8.len(l) or #l
    if n > w then w, at = n, l end
  end
  return w, at
end

return M
