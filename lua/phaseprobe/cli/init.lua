--- phaseprobe.cli: the `phaseprobe` command: the one convention every
-- subcommand follows, its options, and the dispatcher. main(argv) returns
-- the exit status:
--   0  done (damaged input lines, if any, were reported on stderr and left out)
--   1  bad input: unreadable, no records, damaged lines under --strict, or
--      output that cannot be written (the message names file and line)
--   2  usage error
--
-- Sits at the end of the data flow: inputs (phaseprobe.cli.inputs: logs,
-- CSV, JSON lines) -> record sets -> analysis/ -> output/ -> a file or the
-- terminal.
--
-- A subcommand is a module phaseprobe.cli.cmd_NAME on package.path
-- (dashes in NAME become underscores). The built-in ones are listed in
-- M.COMMANDS; any other cmd_NAME.lua found on the Lua path runs as
-- `phaseprobe NAME` too. A command module returns
--
--   return {
--     summary = "one line for the command list",
--     usage = "usage: phaseprobe NAME [options] FILE...\n\n<details>",
--     reads = true,            -- optional: reads records (takes the input options)
--     run = function(args, ctx) ... return 0 end,   -- exit status
--     usage_on_error = true,   -- optional: the usage follows a usage error
--   }
--
-- and a command that reads records declares that table with
--
--   local C = cli.reader("one line", [[usage: phaseprobe NAME ...]], { usage_on_error = true })
--
-- (reads = true, the input options' help after the usage; then C.run).
--
-- run gets the arguments after NAME (--help and -h are answered before)
-- and a ctx:
--   ctx.options(args, spec)    parses them (see M.parse_options; a `reads`
--                              command's spec gets M.INPUT_OPTIONS too):
--                              opts, positionals; sets ctx.opts, ctx.raw
--                              (--raw: exact integers), ctx.wide (--wide)
--   ctx.read(files)            the inputs as one record set after --where,
--                              and the parse report (phaseprobe.cli.inputs)
--   ctx.out, ctx.err, ctx.name the streams, "phaseprobe NAME"
--   ctx.progress(what, opts)   a progress line (phaseprobe.cli.progress)
--   ctx.write(...)             to ctx.out
--   ctx.output(path)           a writer for -o PATH ("-" or nil: ctx.out):
--                              w.write(s), w.close()
--   ctx.usage(msg), ctx.fail(msg)   raise a usage error (2), an input error (1)
-- A command whose standard output cannot be written (a full disk,
-- > /dev/full) exits 1, whatever it returned.
local M = {}

--- The built-in commands, in the order help lists them: the one list (a
-- spec checks it against the cmd_*.lua files of this folder).
M.COMMANDS = { "report", "fit", "compare", "whatif", "trace", "html", "plot", "export", "ptx",
  "demo" }

local UsageError = { __name = "phaseprobe.usage_error" }
local InputError = { __name = "phaseprobe.input_error" }
UsageError.__tostring = function(e) return e.msg end
InputError.__tostring = function(e) return e.msg end

function M.usage_error(msg) error(setmetatable({ msg = msg }, UsageError), 0) end
function M.input_error(msg) error(setmetatable({ msg = msg }, InputError), 0) end

-- ---- option parsing ---------------------------------------------------------

--- Parses options. spec: { ["--name"] = "flag" | "value" | "list", ... ,
-- short = { ["-g"] = "--group" } }. Accepts --name value, --name=value, a
-- lone "-" as a positional (stdin) and "--" to end options. Returns opts
-- (keys without dashes, "-" as "_": flags true, values strings, lists
-- tables) and the positionals. Unknown options raise a usage error.
function M.parse_options(args, spec)
  local opts, pos = {}, {}
  local i, n = 1, #args
  local function key(name) return (name:gsub("^%-%-", ""):gsub("%-", "_")) end
  while i <= n do
    local a = args[i]
    if a == "--" then
      for j = i + 1, n do pos[#pos + 1] = args[j] end
      break
    elseif a:sub(1, 1) == "-" and a ~= "-" then
      local name, value = a:match("^(%-%-[^=]+)=(.*)$")
      name = name or a
      if spec.short and spec.short[name] then name = spec.short[name] end
      local kind = spec[name]
      if not kind then
        M.usage_error(string.format("unknown option '%s'", name))
      end
      if kind == "flag" then
        if value then M.usage_error(string.format("option '%s' takes no value", name)) end
        opts[key(name)] = true
      else
        if not value then
          i = i + 1
          value = args[i]
          if value == nil then
            M.usage_error(string.format("option '%s' needs a value", name))
          end
        end
        if kind == "list" then
          local k = key(name)
          opts[k] = opts[k] or {}
          table.insert(opts[k], value)
        else
          opts[key(name)] = value
        end
      end
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

--- "k=v" -> k, v: v as its text, which the records are matched against
-- exactly (records.condition: "k=v" compares numbers by their digits, a
-- u64 past 2^63-1 included), or read as a number (cli.number).
function M.pair(s, what)
  local k, v = s:match("^([%w_@]+)=(.+)$")
  if not k then
    M.usage_error(string.format("%s '%s': expected name=value", what, s))
  end
  return k, v
end

--- A number option.
function M.number(s, what, min)
  local v = tonumber(s)
  if not v or (min and v < min) then
    M.usage_error(string.format("%s '%s': expected a number%s", what, tostring(s),
      min and (" >= " .. min) or ""))
  end
  return v
end

--- A usage error unless the record set has the field `name` that the
-- option (its text, "--group" or "--by x") names; with kind "number", a
-- field that holds numbers (a tag's text is no quantity to plot or fit
-- against, nor to summarise). The error lists the fields that would do.
function M.need_field(set, option, name, kind)
  local report = require "phaseprobe.output.report"
  local choices = kind == "number" and report.number_choices or report.field_choices
  if not set:has(name) then
    M.usage_error(string.format("%s: no field '%s' in the records (%s)", option, name, choices(set)))
  end
  if kind == "number" and set:columns():kind(name) == "string" then
    M.usage_error(string.format("%s: '%s' is a tag (text), not a number (%s)", option, name,
      choices(set)))
  end
end

--- "a,b,c" -> {"a", "b", "c"}
function M.split_list(s)
  local out = {}
  for x in tostring(s):gmatch("[^,%s]+") do out[#out + 1] = x end
  return out
end

--- The options of every command that reads records.
M.INPUT_OPTIONS = {
  ["--where"] = "list", ["--strict"] = "flag", ["--lenient"] = "flag",
  ["--prefix"] = "list", ["--numeric"] = "list", ["--raw"] = "flag", ["--wide"] = "flag",
}

M.INPUT_HELP = [[

input options (every command that reads records):
  --where F=V      only records whose field or tag F equals V; also F!=V, F<N,
                   F<=N, F>N, F>=N (repeatable: all must hold)
  --strict         refuse input with damaged record lines (exit status 1);
                   by default they are counted and named on stderr, left out,
                   and the command goes on (exit status 0)
  --prefix P       only lines starting with the word P are records (repeatable;
                   default: any word followed by name=value fields)
  --numeric F      field F must hold unsigned integers (repeatable)
  --raw            exact integers (ns, counts) instead of 3 significant digits
  --wide           long explanations stay on their row instead of wrapping
FILE is a log of record lines, a CSV or a JSON-lines export (by its extension,
else by its content), or - for standard input.]]

--- The table of a command that reads records: reads = true, the summary,
-- and the usage followed by the input options' help (M.INPUT_HELP), so
-- that every such command says the same about them. flags: the other
-- fields of the convention (usage_on_error). The caller adds run.
function M.reader(summary, usage, flags)
  local cmd = { reads = true, summary = summary, usage = usage .. M.INPUT_HELP }
  for k, v in pairs(flags or {}) do cmd[k] = v end
  return cmd
end

-- ---- commands ---------------------------------------------------------------

local function module_name(name)
  return "phaseprobe.cli.cmd_" .. name:gsub("%-", "_")
end

--- Loads a command module: module, or nil when there is no such command.
-- A module that exists but fails to load raises.
function M.command(name)
  if type(name) ~= "string" or not name:match("^[a-z][a-z0-9_%-]*$") then return nil end
  local mod = module_name(name)
  if not package.loaded[mod] and not package.preload[mod]
    and not package.searchpath(mod, package.path) then
    return nil
  end
  local cmd = require(mod)
  if type(cmd) ~= "table" or type(cmd.run) ~= "function" then
    error(string.format("command module %s does not return a table with run()", mod), 0)
  end
  return cmd
end

--- Names of the commands help lists: the built-in ones, then those named in
-- PHASEPROBE_COMMANDS (a comma-separated list, for commands added on the
-- Lua path) that load.
function M.commands()
  local seen, out = {}, {}
  for _, n in ipairs(M.COMMANDS) do seen[n] = true; out[#out + 1] = n end
  for _, n in ipairs(M.split_list(os.getenv("PHASEPROBE_COMMANDS") or "")) do
    if not seen[n] then seen[n] = true; out[#out + 1] = n end
  end
  return out
end

-- A command's summary for the list, read from its module's source when it is
-- a string literal there (`summary = "..."`, or cli.reader("...", ...)),
-- as this package's commands write it: listing the commands then loads none
-- of them, nor what they require, and `phaseprobe --help` costs little more
-- than starting Lua (bench/startup.lua). Otherwise the module is loaded and
-- asked.
local function summary_of(name)
  local mod = module_name(name)
  if not package.loaded[mod] and not package.preload[mod] then
    local path = package.searchpath(mod, package.path)
    local f = path and io.open(path, "r")
    if f then
      local text = f:read(65536) or ""
      f:close()
      local s = text:match('[\n{,]%s*summary%s*=%s*"([^"\\\n]*)"')
        or text:match('%.reader%(%s*"([^"\\\n]*)"')
      if s then return s end
    end
  end
  local ok, cmd = pcall(M.command, name)
  if not ok then return "(fails to load: " .. tostring(cmd) .. ")" end
  if not cmd then return "(not installed)" end
  return cmd.summary or ""
end

local function help_text(prog)
  local lines = {
    "usage: " .. prog .. " COMMAND [options] [FILE...]",
    "",
    "Per-dispatch phase records: reports, scaling fits, comparisons, what-if",
    "projections, timelines, pages and plots over logs of record lines (ours or",
    "the reference's), or their CSV and JSON-lines exports.",
    "",
    "commands:",
  }
  local width = 0
  local names = M.commands()
  for _, n in ipairs(names) do width = math.max(width, #n) end
  for _, n in ipairs(names) do
    lines[#lines + 1] = string.format("  %-" .. width .. "s  %s", n, summary_of(n))
  end
  for _, l in ipairs {
    "",
    "'" .. prog .. " COMMAND --help' describes one. A module phaseprobe/cli/cmd_NAME.lua",
    "on the Lua path runs as '" .. prog .. " NAME' (list it here with",
    "PHASEPROBE_COMMANDS=NAME,...).",
    "",
    "Every command that reads records takes logs, CSV and JSON lines (- for",
    "standard input), --where F=V and --strict. Damaged record lines are counted",
    "and the first few named on stderr, then left out; the command goes on.",
    "",
    "Exit status: 0 done (damaged lines, if any, were reported and left out);",
    "1 bad input: unreadable, no records, damaged lines under --strict, or output",
    "that cannot be written (the message names file and line); 2 usage error.",
  } do lines[#lines + 1] = l end
  return table.concat(lines, "\n") .. "\n"
end

-- ---- the ctx ------------------------------------------------------------------

-- Whether a file method's result says it failed: nil plus a message (a
-- stream stand-in that returns nothing is not a failure).
local function failed(ok, msg) return ok == nil and msg ~= nil end

local function write_failure(msg)
  return "writing to standard output failed: " .. tostring(msg)
end

local function make_ctx(cmd, name, out, err)
  local ctx = { out = out, err = err, name = name, t0 = require("phaseprobe.cli.progress").now() }
  function ctx.write(...)
    local ok, msg = out:write(...)
    if failed(ok, msg) then M.input_error(write_failure(msg)) end
  end
  function ctx.usage(msg) M.usage_error(msg) end
  function ctx.options(args, spec)
    local all = {}
    if cmd.reads then for k, v in pairs(M.INPUT_OPTIONS) do all[k] = v end end
    for k, v in pairs(spec or {}) do all[k] = v end
    local opts, pos = M.parse_options(args, all)
    ctx.opts, ctx.raw, ctx.wide = opts, opts.raw, opts.wide
    local report = require "phaseprobe.output.report"
    if opts.raw then report.raw = true end
    if opts.wide then report.wide = true end
    return opts, pos
  end
  -- (an exporter's message names itself, "export.csv: cannot write ...":
  -- the command names itself already)
  function ctx.fail(msg)
    msg = tostring(msg)
    local lib, rest = msg:match("^(export%.[%a_]+): (.*)$")
    if lib and (rest:match("^cannot write '") or rest:match("^writing '")) then msg = rest end
    M.input_error(msg)
  end
  -- (each kept, so that a line still shown when an error ends the command
  -- is cleared before its message)
  ctx.lines = {}
  function ctx.progress(what, opts)
    local p = require("phaseprobe.cli.progress").new(ctx, what, opts)
    if p.on then ctx.lines[#ctx.lines + 1] = p end
    return p
  end
  function ctx.read(files, ropts)
    return require("phaseprobe.cli.inputs").read(ctx, files, ropts)
  end
  --- A writer for an output path ("-" or nil: ctx.out).
  function ctx.output(path)
    local to_out = not path or path == "-"
    local f, oerr = out, nil
    if not to_out then
      f, oerr = io.open(path, "wb")
      if not f then
        M.input_error(string.format("cannot write '%s': %s", path,
          require("phaseprobe.output.files").reason(oerr, path)))
      end
    end
    local w, bad = {}, nil
    function w.write(s)
      if bad then return end
      local ok, e = f:write(s)
      if failed(ok, e) then bad = e end
    end
    function w.close()
      local ok, e
      if to_out then ok, e = f:flush() else ok, e = f:close() end
      if bad or failed(ok, e) then
        M.input_error(to_out and write_failure(bad or e)
          or string.format("writing '%s' failed: %s", path,
            require("phaseprobe.output.files").reason(bad or e, path)))
      end
    end
    return w
  end
  return ctx
end

--- Runs the command module `cmd` as `phaseprobe NAME ARGS...`: answers
-- --help, parses the options (the input options too for a `reads`
-- command), makes the ctx, and turns errors into their exit status and a
-- message on err. out, err default to io.stdout, io.stderr (as they are at
-- the call). Returns the exit status.
function M.run(cmd, name, args, out, err)
  out, err = out or io.stdout, err or io.stderr
  local prog = "phaseprobe"
  for _, a in ipairs(args) do
    if a == "--" then break end
    if a == "--help" or a == "-h" then
      return M.say(out, err, prog .. " " .. name, (cmd.usage or (prog .. " " .. name)) .. "\n", 0)
    end
  end
  local ctx = make_ctx(cmd, prog .. " " .. name, out, err)
  ctx.opts = {}
  -- --raw and --wide set the report module's style for this command only
  local report = require "phaseprobe.output.report"
  local raw, wide = report.raw, report.wide
  local okr, res = xpcall(cmd.run, function(e)
    local mt = getmetatable(e)
    if mt == UsageError or mt == InputError then return e end
    if type(e) == "string" and os.getenv("PHASEPROBE_DEBUG") then
      return debug.traceback(e, 2)
    end
    return e
  end, args, ctx)
  report.raw, report.wide = raw, wide
  if not okr then
    for _, p in ipairs(ctx.lines) do p:done() end
  end
  local fok, fmsg = out:flush()
  if okr and failed(fok, fmsg) then
    err:write(string.format("%s: %s\n", ctx.name, write_failure(fmsg)))
    return 1
  end
  if not okr then
    local mt = getmetatable(res)
    if mt == UsageError then
      local after = cmd.usage_on_error and cmd.usage
        or ("(see '" .. prog .. " " .. name .. " --help')")
      M.say_error(err, string.format("%s: %s", ctx.name, res.msg), ctx.wide)
      err:write(after, "\n")
      return 2
    end
    local msg = mt == InputError and res.msg or tostring(res)
    -- the command names itself: a library's own prefix
    -- ("phaseprobe.whatif: ...") would say it twice
    msg = msg:gsub("^phaseprobe%.[%w_.]+[:%w_]*: ", "")
    M.say_error(err, string.format("%s: %s", ctx.name, msg), ctx.wide)
    return 1
  end
  return math.tointeger(res) or (res == false and 1 or 0)
end

--- Writes a message and a newline to err within report.width columns: a
-- line too long goes on under its first words, indented by four spaces (as
-- the damaged lines are named); with wide (--wide), as it is.
function M.say_error(err, text, wide)
  local report = require "phaseprobe.output.report"
  local out = {}
  for line in (tostring(text) .. "\n"):gmatch("(.-)\n") do
    if wide or (utf8.len(line) or #line) <= report.width then
      out[#out + 1] = line
    else
      out[#out + 1] = table.concat(report.wrap(line, report.width, "    ", ""), "\n")
    end
  end
  err:write(table.concat(out, "\n"), "\n")
end

--- Writes text to out and flushes it: status, or 1 (with a message on
-- err) when that fails.
function M.say(out, err, who, text, status)
  local ok, msg = out:write(text)
  if not failed(ok, msg) then ok, msg = out:flush() end
  if failed(ok, msg) then
    err:write(string.format("%s: %s\n", who, write_failure(msg)))
    return 1
  end
  return status
end

--- Runs the command line; returns the exit status.
function M.main(argv, out, err)
  out, err = out or io.stdout, err or io.stderr
  local prog = "phaseprobe"
  local args = {}
  for i = 1, #argv do args[i] = argv[i] end
  local name = table.remove(args, 1)
  if name == nil or name == "--help" or name == "-h" or name == "help" then
    if name == "help" and args[1] then
      name = table.remove(args, 1)
      args = { "--help" }
    else
      return M.say(out, err, prog, help_text(prog), name == nil and 2 or 0)
    end
  end
  if name == "--version" then
    local ok, pp = pcall(require, "phaseprobe")
    return M.say(out, err, prog, prog .. " " .. (ok and pp.version or "?") .. "\n", 0)
  end
  local ok, cmd = pcall(M.command, name)
  if not ok then
    err:write(string.format("%s %s: %s\n", prog, name, tostring(cmd)))
    return 1
  end
  if not cmd then
    M.say_error(err, string.format("%s: unknown command '%s' (commands: %s; '%s --help' lists them)",
      prog, name, table.concat(M.commands(), ", "), prog))
    return 2
  end
  return M.run(cmd, name, args, out, err)
end

return M
