-- phaseprobe.cliutil: what the export, trace, html and plot subcommands share:
-- option parsing, reading inputs, reporting failures with the right exit code.
--
-- Exit codes: 0 done, 1 bad or unreadable input (the message names the file
-- and line), 2 usage error (the usage text follows the message).
local export = require "phaseprobe.export"
local recview = require "phaseprobe.recview"

local M = {}

M.OK, M.BAD_INPUT, M.USAGE = 0, 1, 2

-- The output and error streams: the command's context's (ctx.out, ctx.err,
-- from bin/phaseprobe) or the process's.
function M.streams(ctx)
  local out = type(ctx) == "table" and ctx.out or io.stdout
  local err = type(ctx) == "table" and ctx.err or io.stderr
  return out, err
end

function M.say(cmd, msg, err)
  err = err or io.stderr
  err:write("phaseprobe ", cmd, ": ", msg, "\n")
end

function M.usage_error(cmd, usage, msg, err)
  err = err or io.stderr
  M.say(cmd, msg, err)
  err:write(usage, "\n")
  return M.USAGE
end

-- spec: list of { "-o", "--output", key = "out", value = true }. Returns
-- opts, positional; or nil, message. "-h"/"--help" set opts.help.
function M.parse_args(argv, spec)
  if type(argv) ~= "table" then return nil, "arguments must be a list of strings" end
  local lookup = { ["-h"] = { key = "help" }, ["--help"] = { key = "help" } }
  for _, o in ipairs(spec) do
    for _, name in ipairs(o) do lookup[name] = o end
  end
  local opts, pos = {}, {}
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if type(a) ~= "string" then return nil, ("argument %d is not a string"):format(i) end
    if a == "--" then
      for j = i + 1, #argv do pos[#pos + 1] = argv[j] end
      break
    end
    if a:sub(1, 1) == "-" and a ~= "-" then
      local name, val = a:match("^(%-%-[^=]+)=(.*)$")
      name = name or a
      local o = lookup[name]
      if not o then return nil, ("unknown option '%s'"):format(name) end
      if o.value then
        if val == nil then
          i = i + 1
          val = argv[i]
          if val == nil then return nil, ("option %s needs a value"):format(name) end
        end
        opts[o.key] = val
      else
        if val ~= nil then return nil, ("option %s takes no value"):format(name) end
        opts[o.key] = true
      end
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

local function basename(path)
  return path:match("([^/]+)$") or path
end
M.basename = basename

-- A log through the record sets of phaseprobe.records (or the C parser,
-- pp.parse.file, directly). Any rejected record line makes the whole input
-- bad: its file and line are named.
local function load_log(path)
  local reader
  local rok, records = pcall(require, "phaseprobe.records")
  if rok and type(records) == "table" and type(records.read) == "function" then
    reader = records.read
  else
    local ok, pp = pcall(require, "phaseprobe")
    local parse = ok and type(pp) == "table" and pp.parse or nil
    if type(parse) == "table" and type(parse.file) == "function" then reader = parse.file end
  end
  if not reader then
    return nil, ("%s: this build has no log parser (phaseprobe.parse.file); .csv and .jsonl "
      .. "exports can be read instead"):format(path)
  end
  local pok, cols, report = pcall(reader, path)
  if not pok then return nil, ("%s: %s"):format(path, tostring(cols)) end
  if not cols then return nil, tostring(report) end
  if type(report) == "table" and type(report.errors) == "table" and #report.errors > 0 then
    local e = report.errors[1]
    local more = #report.errors > 1 and (" (%d more rejected lines)"):format(#report.errors - 1) or ""
    local col = e.column and (":" .. tostring(e.column)) or ""
    return nil, ("%s:%s%s: %s%s"):format(e.file or path, tostring(e.line or "?"), col,
      tostring(e.what or "malformed record"), more)
  end
  return cols
end

-- Records from one input: .csv and .jsonl through the exporters' readers,
-- anything else as a log. Returns an array of records, or nil, message.
function M.load(path)
  local records, err
  if path:match("%.[cC][sS][vV]$") then
    records, err = export.read_csv(path)
  elseif path:match("%.jsonl$") or path:match("%.ndjson$") then
    records, err = export.read_jsonl(path)
  else
    records, err = load_log(path)
  end
  if not records then return nil, err end
  local ok, list = pcall(recview.collect, records, path)
  if not ok then return nil, tostring(list) end
  if #list == 0 then return nil, ("%s: no records found"):format(path) end
  return list
end

-- Every input as a run { name =, set = }, or nil, message.
function M.load_all(paths)
  local runs = {}
  for _, p in ipairs(paths) do
    local set, err = M.load(p)
    if not set then return nil, err end
    runs[#runs + 1] = { name = basename(p), path = p, set = set }
  end
  return runs
end

-- Writes text to `path` ("-" or nil: the stream `out`): true or nil, message.
function M.write_output(path, text, out)
  if not path or path == "-" then
    local ok, err = out:write(text)
    if not ok then return nil, ("writing to standard output failed: %s"):format(tostring(err)) end
    return true
  end
  local f, err = io.open(path, "wb")
  if not f then return nil, ("cannot write '%s': %s"):format(path, err) end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then return nil, ("writing '%s' failed: %s"):format(path, tostring(werr or cerr)) end
  return true
end

-- All runs' records in one array.
function M.concat(runs)
  local all = {}
  for _, run in ipairs(runs) do
    for _, r in ipairs(run.set) do all[#all + 1] = r end
  end
  return all
end

-- nil when some record has the field, else a message listing the counts.
function M.missing_field(records, name)
  for _, r in ipairs(records) do
    if r[name] ~= nil then return nil end
  end
  return ("no record has a field '%s' (counts: %s)"):format(name,
    table.concat(recview.layout(records[1]).counts, ", "))
end

-- Fits from the analysis module (phaseprobe.analyze.scaling: Theil-Sen
-- fits and verdicts against every counted quantity), as the plain data the
-- report and plots take: { [label] = {intercept=, slope=, verdict=, note=,
-- quantity=, r2=, method=} }. nil when that module is not installed or
-- fails; the report then uses its own least-squares fallback. This is the
-- one place the two modules meet.
--
-- With `by` (the user's --by), only fits against that quantity are kept (and
-- verdicts without one: fixed, inconclusive), so the plots show what was asked.
function M.analysis_fits(records, by)
  local ok1, recmod = pcall(require, "phaseprobe.records")
  local ok2, analyze = pcall(require, "phaseprobe.analyze")
  if not (ok1 and ok2 and type(recmod) == "table" and type(analyze) == "table"
        and type(recmod.from_list) == "function" and type(analyze.scaling) == "function") then
    return nil
  end
  local ok, s = pcall(function()
    local set = recmod.is_set and recmod.is_set(records) and records or recmod.from_list(records)
    return analyze.scaling(set)
  end)
  if not ok or type(s) ~= "table" then return nil end
  local fits = {}
  for _, list in ipairs { s.phases or {}, s.nested or {} } do
    for _, v in ipairs(list) do
      if type(v.name) == "string" then
        local f = by and v.quantity ~= by and type(v.fits) == "table" and v.fits[by] or nil
        if f and f.ok and f.ts then
          -- asked for another quantity than the verdict's: its own fit, the
          -- verdict kept as it is
          fits[v.name] = { verdict = v.verdict .. (v.quantity and (" (plotted against " .. by .. ")") or ""),
            note = v.reason, quantity = by, intercept = f.ts.intercept, slope = f.ts.slope,
            r2 = f.ls and f.ls.r2, method = "Theil-Sen" }
        elseif not by or v.quantity == nil or v.quantity == by then
          fits[v.name] = { verdict = v.verdict, note = v.reason, quantity = v.quantity,
            intercept = v.fixed_ns, slope = v.ns_per_unit, r2 = v.r2, method = "Theil-Sen",
            legend = v.ns_per_unit == 0 and "fixed cost (median)" or nil }
        end
      end
    end
  end
  return fits
end

return M
