--- bench/startup.lua: what starting the command costs against starting Lua.
--
--   lua5.4 bench/startup.lua [rounds [runs]]   (default 15 rounds of 20 runs;
--                                                make bench runs it)
--
-- Whole processes, started by one shell per round that runs the same command
-- `runs` times (so the shell's own start is spread over the runs and is the
-- same for every variant), in alternating rounds (bench/rounds.lua):
--   * bare: `lua5.4 -e ''`, the baseline;
--   * require: `lua5.4 -e 'require "phaseprobe"'` (the module of this
--     checkout), what loading the module adds;
--   * help: `bin/phaseprobe --help` (the command of this checkout, run by
--     lua5.4, its output to /dev/null).
-- Prints min/median/max per run in microseconds and median / bare's median.
-- The goal: help at most 2 x bare. Asserts nothing about time.
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()

local ROUNDS = math.tointeger(tonumber(arg[1] or "")) or 15
local RUNS = math.tointeger(tonumber(arg[2] or "")) or 20
local LUA = os.getenv("LUA") or "lua5.4"
local root = rounds.root

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function variant(name, cmd)
  local script = ("i=0; while [ $i -lt %d ]; do %s; i=$((i+1)); done"):format(RUNS, cmd)
  return {
    name = name,
    run = function()
      local ok = os.execute("sh -c " .. shell_quote(script))
      if not ok then error("bench/startup.lua: failed: " .. cmd) end
    end,
  }
end

local variants = {
  variant("bare: lua5.4 -e ''", LUA .. " -e ''"),
  variant("require: lua5.4 -e 'require \"phaseprobe\"'",
    LUA .. " -e " .. shell_quote("package.cpath='" .. root .. "/?.so;'..package.cpath; require 'phaseprobe'")),
  variant("help: bin/phaseprobe --help", LUA .. " " .. root .. "/bin/phaseprobe --help >/dev/null"),
}

print(("startup: %d rounds of %d runs per variant, alternating; per run, in us"):format(ROUNDS, RUNS))
rounds.run(variants, ROUNDS, RUNS, function() return pp.now() / 1000 end)
rounds.print("variant", variants, 1, "us per run")
print(("help / bare (medians): %.2f (goal: at most 2)"):format(variants[3].median / variants[1].median))
