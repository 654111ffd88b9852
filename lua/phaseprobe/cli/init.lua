--- phaseprobe.cli: the `phaseprobe` command. main(argv) returns the exit
-- status: 0 success, 1 bad input (the message names the file and line),
-- 2 usage error.
--
-- Subcommands are modules. `phaseprobe NAME ...` runs the module
-- phaseprobe.cli.cmd_NAME (dashes in NAME become underscores), found on
-- package.path like any module; adding lua/phaseprobe/cli/cmd_NAME.lua adds
-- the command, and `phaseprobe help` lists it. A command module returns
--
--   return {
--     summary = "one line for the command list",
--     usage = "phaseprobe NAME [options] FILE...\n\n<details>",  -- for --help
--     run = function(args, ctx) ... return 0 end,                 -- exit status
--     usage_on_error = true,   -- optional: the usage follows a usage error
--   }
--
-- M.run(module, NAME, args) runs one the same way without the dispatcher
-- (a module's run called without a ctx can hand itself to it).
--
-- `args` are the arguments after NAME (--help and -h are handled before
-- run). `ctx` offers:
--   ctx.out, ctx.err           the output streams
--   ctx.name                   "phaseprobe NAME"
--   ctx.options(args, spec)    parses options (see M.parse_options)
--   ctx.read(files, opts)      files ("-" = stdin) into one record set, with
--                              progress on stderr past a second and every
--                              rejected line reported as file:line:column;
--                              rejected lines make the exit status 1 unless
--                              opts.lenient
--   ctx.usage(msg)             raise a usage error (exit 2)
--   ctx.fail(msg)              raise an input error (exit 1)
--   ctx.write(...)             write to ctx.out (an input error, exit 1, when
--                              that fails)
--
-- A command whose standard output cannot be written (a full disk,
-- > /dev/full) exits 1, whatever it returned.
local M = {}

--- The commands of this package, in the order help lists them (others,
-- found as phaseprobe/cli/cmd_*.lua on package.path, follow in name order).
M.BUILTIN = { "report", "compare", "fit", "whatif", "ptx", "demo" }

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

--- "k=v" -> k, v (v as an integer when it is one).
function M.pair(s, what)
  local k, v = s:match("^([%w_@]+)=(.+)$")
  if not k then
    M.usage_error(string.format("%s '%s': expected name=value", what, s))
  end
  return k, math.tointeger(tonumber(v)) or v
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

-- ---- options shared by the commands that read records --------------------

M.DATA_OPTIONS = {
  ["--where"] = "list", ["--prefix"] = "list", ["--numeric"] = "list",
  ["--lenient"] = "flag", ["--raw"] = "flag",
}

M.DATA_HELP = [[
input options:
  --where F=V      only records whose field (or tag) F equals V (repeatable)
  --prefix P       only lines starting with the word P are records (repeatable;
                   default: any word followed by name=value fields)
  --numeric F      field F must hold unsigned integers (repeatable)
  --lenient        rejected lines are reported but do not make the exit status 1
  --raw            print nanoseconds as plain integers
FILE may be - for standard input.]]

--- The option spec of a data command: DATA_OPTIONS plus extra.
function M.data_spec(extra)
  local spec = {}
  for k, v in pairs(M.DATA_OPTIONS) do spec[k] = v end
  for k, v in pairs(extra or {}) do spec[k] = v end
  return spec
end

--- Reads the files into a set and applies --where: set, report.
function M.load(ctx, opts, files)
  if opts.raw then require("phaseprobe.output.report").raw = true end
  local set, rep = ctx.read(files, { prefix = opts.prefix, numeric = opts.numeric,
    lenient = opts.lenient })
  for _, w in ipairs(opts.where or {}) do
    local k, v = M.pair(w, "--where")
    set = set:where(k, v)
    if set:count() == 0 then
      M.input_error(string.format("no records left after --where %s (%d records read)",
        w, rep.parsed))
    end
  end
  return set, rep
end

--- "a,b,c" -> {"a", "b", "c"}
function M.split_list(s)
  local out = {}
  for x in tostring(s):gmatch("[^,%s]+") do out[#out + 1] = x end
  return out
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

local function list_dir(dir)
  local ok, lfs = pcall(require, "lfs")
  local out = {}
  if ok and lfs and lfs.dir then
    local ok2, iter, state = pcall(lfs.dir, dir)
    if ok2 then for f in iter, state do out[#out + 1] = f end end
    return out
  end
  -- without lfs, ls: only for a folder that exists (a process each)
  local d = io.open(dir, "r")
  if not d then return out end
  d:close()
  local p = io.popen('ls -1 "' .. dir:gsub('"', '\\"') .. '" 2>/dev/null')
  if p then
    for f in p:lines() do out[#out + 1] = f end
    p:close()
  end
  return out
end

--- Names of every command: the built-ins, then phaseprobe/cli/cmd_*.lua
-- modules found on package.path.
function M.commands()
  local seen, out = {}, {}
  for _, n in ipairs(M.BUILTIN) do seen[n] = true; out[#out + 1] = n end
  local extra = {}
  for template in package.path:gmatch("[^;]+") do
    local dir = template:match("^(.*)%?%.lua$")
    if dir then
      for _, f in ipairs(list_dir(dir .. "phaseprobe/cli")) do
        local name = f:match("^cmd_([%w_]+)%.lua$")
        if name and not seen[name] then seen[name] = true; extra[#extra + 1] = name end
      end
    end
  end
  table.sort(extra)
  for _, n in ipairs(extra) do out[#out + 1] = n end
  return out
end

-- A command's summary for the list, read from its module's source when it is
-- a string literal there (`summary = "..."`, or util.command(NAME, "...")),
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
        or text:match('%.command%(%s*"[^"]*"%s*,%s*"([^"\\\n]*)"')
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
    "Per-dispatch phase records: reports, scaling fits, comparisons and what-if",
    "projections over logs of record lines (ours or the reference's).",
    "",
    "commands:",
  }
  local width = 0
  local names = M.commands()
  for _, n in ipairs(names) do width = math.max(width, #n) end
  for _, n in ipairs(names) do
    lines[#lines + 1] = string.format("  %-" .. width .. "s  %s", n, summary_of(n))
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "'" .. prog .. " COMMAND --help' describes one. Exit status: 0 success,"
  lines[#lines + 1] = "1 bad input (the message names file and line), 2 usage error."
  return table.concat(lines, "\n") .. "\n"
end

-- ---- reading inputs ---------------------------------------------------------

local function now_s()
  local ok, pp = pcall(require, "phaseprobe")
  if ok and pp.now then return pp.now() / 1e9 end
  return os.clock()
end

-- Whether a file method's result says it failed: nil plus a message (a
-- stream stand-in that returns nothing is not a failure).
local function failed(ok, msg) return ok == nil and msg ~= nil end

local function write_failure(msg)
  return "writing to standard output failed: " .. tostring(msg)
end

local function make_ctx(name, out, err)
  local ctx = { out = out, err = err, name = name, rejected = 0 }
  function ctx.write(...)
    local ok, msg = out:write(...)
    if failed(ok, msg) then M.input_error(write_failure(msg)) end
  end
  function ctx.usage(msg) M.usage_error(msg) end
  function ctx.fail(msg) M.input_error(msg) end
  function ctx.options(args, spec) return M.parse_options(args, spec) end
  function ctx.read(files, opts)
    opts = opts or {}
    if #files == 0 then
      M.usage_error("no input: give one or more files, or - for standard input")
    end
    local records = require "phaseprobe.records"
    local t0 = now_s()
    local shown = false
    local current
    local popts = { prefix = opts.prefix, numeric = opts.numeric }
    popts.progress = function(bytes, recs)
      if now_s() - t0 > 1 then
        shown = true
        err:write(string.format("\r%s: reading %s: %.0f MiB, %d records ", name,
          current or "?", bytes / 1048576, recs))
        err:flush()
      end
    end
    local pp = require "phaseprobe"
    local p <close> = pp.parse.new(popts)
    for _, f in ipairs(files) do
      current = f == "-" and "(stdin)" or f
      local ok, msg = p:file(f, popts.progress)
      if not ok then
        if shown then err:write("\n") end
        M.input_error(msg)
      end
    end
    local cols, rep = p:finish()
    if shown then
      err:write(string.format("\r%s: read %d records (%d lines) in %.1f s\n", name,
        rep.parsed, rep.total, now_s() - t0))
    end
    local set = records.wrap(cols)
    for i, e in ipairs(rep.errors) do
      if i > (opts.max_messages or 20) then
        err:write(string.format("%s: ... and %d more rejected lines\n", name,
          rep.rejected - (opts.max_messages or 20)))
        break
      end
      err:write(string.format("%s:%d:%d: %s\n", e.file, e.line, e.column, e.what))
    end
    if rep.errors_dropped and rep.errors_dropped > 0 and #rep.errors <= (opts.max_messages or 20) then
      err:write(string.format("%s: %d more rejected lines not listed\n", name, rep.errors_dropped))
    end
    ctx.rejected = ctx.rejected + rep.rejected
    ctx.lenient = opts.lenient
    if rep.parsed == 0 then
      local where = #files == 1 and (files[1] == "-" and "(stdin)" or files[1])
        or (#files .. " files")
      M.input_error(string.format("%s: no record lines (%d lines: %d rejected, %d other)",
        where, rep.total, rep.rejected, rep.other))
    end
    return set, rep
  end
  function ctx.status()
    if ctx.rejected > 0 and not ctx.lenient then return 1 end
    return 0
  end
  return ctx
end

--- Runs the command module `cmd` as `phaseprobe NAME ARGS...`: answers
-- --help, makes the ctx, and turns errors into their exit status and a
-- message on err. out, err default to io.stdout, io.stderr (as they are at
-- the call). Returns the exit status. A module with `usage_on_error = true`
-- has its usage printed after a usage error's message (else a pointer to
-- --help).
function M.run(cmd, name, args, out, err)
  out, err = out or io.stdout, err or io.stderr
  local prog = "phaseprobe"
  for _, a in ipairs(args) do
    if a == "--" then break end
    if a == "--help" or a == "-h" then
      return M.say(out, err, prog .. " " .. name, (cmd.usage or (prog .. " " .. name)) .. "\n", 0)
    end
  end
  local ctx = make_ctx(prog .. " " .. name, out, err)
  local okr, res = xpcall(cmd.run, function(e)
    local mt = getmetatable(e)
    if mt == UsageError or mt == InputError then return e end
    if type(e) == "string" and os.getenv("PHASEPROBE_DEBUG") then
      return debug.traceback(e, 2)
    end
    return e
  end, args, ctx)
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
      err:write(string.format("%s: %s\n%s\n", ctx.name, res.msg, after))
      return 2
    end
    local msg = mt == InputError and res.msg or tostring(res)
    err:write(string.format("%s: %s\n", ctx.name, msg))
    return 1
  end
  local code = math.tointeger(res) or (res == false and 1 or 0)
  return math.max(code, ctx.status())
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
    err:write(string.format("%s: unknown command '%s' (commands: %s; '%s --help' lists them)\n",
      prog, name, table.concat(M.commands(), ", "), prog))
    return 2
  end
  return M.run(cmd, name, args, out, err)
end

return M
