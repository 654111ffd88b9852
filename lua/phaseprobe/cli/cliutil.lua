-- phaseprobe.cli.cliutil: what the export, trace, html and plot subcommands
-- share beyond the command framework (phaseprobe.cli, whose ctx, option
-- parser and log reading they use): a module whose run also works called
-- directly, inputs that may be .csv / .jsonl exports as well as logs, one
-- run per input, writing a text to a file.
--
-- Exit codes (those of phaseprobe.cli): 0 done, 1 bad or unreadable input
-- (the message names the file and line), 2 usage error (the usage follows).
local cli = require "phaseprobe.cli"
local export = require "phaseprobe.output.export"
local records = require "phaseprobe.records"

local M = {}

--- A command module for phaseprobe.cli. body(args, ctx) gets the ctx the
-- dispatcher passes; run(args) called without one (from a script or a
-- spec) runs through cli.run with the process's streams. A usage error
-- prints the usage.
function M.command(name, summary, usage, body)
  local C = { summary = summary, usage = usage, usage_on_error = true }
  function C.run(args, ctx)
    if ctx then return body(args, ctx) end
    return cli.run(C, name, args)
  end
  return C
end

-- Records of one input as a record set: .csv and .jsonl through the
-- exporters' readers, anything else as a log through ctx.read. Any
-- rejected record line makes the input bad (ctx.read names each as
-- file:line:column) and nothing is written.
local function load(ctx, path)
  local set, err
  if path:match("%.[cC][sS][vV]$") then
    set, err = export.read_csv(path)
  elseif path:match("%.jsonl$") or path:match("%.ndjson$") then
    set, err = export.read_jsonl(path)
  else
    local rep
    set, rep = ctx.read({ path })
    if rep.rejected > 0 then
      ctx.fail(("%s: %d rejected record lines, nothing written"):format(path, rep.rejected))
    end
  end
  if not set then ctx.fail(err) end
  if set:count() == 0 then ctx.fail(("%s: no records found"):format(path)) end
  return set
end

--- Every input as a run { name = basename, path =, set = record set };
-- a usage error when there is none.
function M.runs(ctx, paths)
  if #paths == 0 then ctx.usage("no LOG given") end
  local runs = {}
  for _, p in ipairs(paths) do
    runs[#runs + 1] = { name = p:match("([^/]+)$") or p, path = p, set = load(ctx, p) }
  end
  return runs
end

--- Writes text to `path` ("-" or nil: ctx.out); an input error (exit 1)
-- when that fails.
function M.write_output(ctx, path, text)
  if not path or path == "-" then
    local ok, err = ctx.out:write(text)
    if not ok then ctx.fail(("writing to standard output failed: %s"):format(tostring(err))) end
    return
  end
  local f, err = io.open(path, "wb")
  if not f then ctx.fail(("cannot write '%s': %s"):format(path, err)) end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then ctx.fail(("writing '%s' failed: %s"):format(path, tostring(werr or cerr))) end
end

-- All runs' records in one set.
function M.concat(runs)
  if #runs == 1 then return runs[1].set end
  local sets = {}
  for i, run in ipairs(runs) do sets[i] = run.set end
  return records.concat(sets)
end

--- A usage error unless the set has each of the fields named by the
-- options `names` (e.g. { "by", "group" }) that opts sets.
function M.need_fields(ctx, set, opts, names)
  for _, o in ipairs(names) do
    local name = opts[o]
    if name ~= nil and not set:has(name) then
      ctx.usage(("--%s %s: no record has a field '%s' (counts: %s)"):format(o, name, name,
        table.concat(set:layout().counts, ", ")))
    end
  end
end

return M
