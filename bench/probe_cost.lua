-- Host cost of one measured phase, in C and through Lua, against bare calls
-- and a two-clock baseline measured in the same run, in alternating rounds
-- (bench/rounds.lua, bench/rounds.h): min/median/max of the rounds.
--   lua5.4 bench/probe_cost.lua [rounds]        (make bench runs it)
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()

local R = math.tointeger(tonumber(arg[1] or "")) or 9
local p = io.popen("build/bench_probe_cost " .. R)
io.write(p:read("a"))
assert(p:close(), "build/bench_probe_cost failed (run make first)")
print()
print(rounds.clock_note(pp))

local N = 2000000
local function f() end

pp.sink("none")
pp.store.enable(false)
local phase, measure, clock = pp.phase, pp.measure, os.clock

-- each round inside an open dispatch, the flag as the variant wants
local function opened(enabled)
  return function()
    pp.enable()
    pp.begin()
    if not enabled then pp.disable() end
  end
end
local function closed()
  pp.enable()
  if pp.is_open() then pp.emit { wall_ns = 0 } end
end
local function v(name, enabled, run)
  return { name = name, setup = opened(enabled), after = closed, run = run }
end

local abs, lap, mark = math.abs, pp.lap, pp.mark
local variants = rounds.run({
  v("bare Lua call f()", false, function(n) for _ = 1, n do f() end end),
  v("bare Lua call f(), again (noise)", false, function(n) for _ = 1, n do f() end end),
  v("bare Lua-to-C call math.abs(1)", false, function(n) for _ = 1, n do abs(1) end end),
  v("disabled pp.measure('prepare', f)", false, function(n) for _ = 1, n do measure("prepare", f) end end),
  v("disabled <close> pp.phase scope + f()", false, function(n)
    for _ = 1, n do local _ <close> = phase("prepare"); f() end end),
  v("enabled pp.measure('prepare', f)", true, function(n) for _ = 1, n do measure("prepare", f) end end),
  v("enabled <close> pp.phase scope + f()", true, function(n)
    for _ = 1, n do local _ <close> = phase("prepare"); f() end end),
  v("enabled t = pp.lap('prepare', t) + f()", true, function(n)
    local t = mark()
    for _ = 1, n do f(); t = lap("prepare", t) end end),
  v("baseline: os.clock() pair + f()", false, function(n)
    local acc = 0
    for _ = 1, n do local a = clock(); f(); acc = acc + (clock() - a) end end),
}, R, N, pp.now)

print(("%d iterations a round, %d alternating rounds"):format(N, R))
rounds.print("Lua, ns per phase", variants, 1)
