-- phaseprobe.cliutil: what the export, trace, html and plot subcommands share:
-- option parsing, reading inputs, reporting failures with the right exit code.
--
-- Exit codes: 0 done, 1 bad or unreadable input (the message names the file
-- and line), 2 usage error (the usage text follows the message).
local export = require "phaseprobe.export"
local recview = require "phaseprobe.recview"

local M = {}

M.OK, M.BAD_INPUT, M.USAGE = 0, 1, 2

function M.say(cmd, msg)
  io.stderr:write("phaseprobe ", cmd, ": ", msg, "\n")
end

function M.usage_error(cmd, usage, msg)
  M.say(cmd, msg)
  io.stderr:write(usage, "\n")
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

-- A log through the C parser (pp.parse.file). Any rejected record line
-- makes the whole input bad: its file and line are named.
local function load_log(path)
  local ok, pp = pcall(require, "phaseprobe")
  local parse = ok and type(pp) == "table" and pp.parse or nil
  if type(parse) ~= "table" or type(parse.file) ~= "function" then
    return nil, ("%s: this build has no log parser (phaseprobe.parse.file); .csv and .jsonl "
      .. "exports can be read instead"):format(path)
  end
  local pok, cols, report = pcall(parse.file, path)
  if not pok then return nil, ("%s: %s"):format(path, tostring(cols)) end
  if not cols then return nil, tostring(report) end
  if type(report) == "table" and type(report.errors) == "table" and #report.errors > 0 then
    local e = report.errors[1]
    local more = #report.errors > 1 and (" (%d more rejected lines)"):format(#report.errors - 1) or ""
    return nil, ("%s:%s: %s%s"):format(e.file or path, tostring(e.line or "?"), tostring(e.what or
      "malformed record"), more)
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

-- Fits from the analysis module, when it is there: { [label] = {intercept=,
-- slope=, verdict=, quantity=, r2=} } or nil (the report then uses its own
-- fallback). This is the one place the two modules meet.
function M.analysis_fits(records, labels, quantity)
  local ok, fit = pcall(require, "phaseprobe.fit")
  if not ok or type(fit) ~= "table" or type(fit.phases) ~= "function" then return nil end
  local fok, fits = pcall(fit.phases, records, { phases = labels, quantity = quantity })
  if not fok or type(fits) ~= "table" then return nil end
  return fits
end

return M
