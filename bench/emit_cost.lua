-- What pp.emit costs from Lua, per sink, against a bare Lua-to-C call and
-- pp.begin alone, in alternating rounds (bench/rounds.lua). pp.emit returns
-- a phaseprobe.record that holds a copy of the C record and reads fields
-- only when asked, so an unused record costs its allocation; the C part with
-- sink "none" and the store off is the pp_emit row of build/bench_emit_cost.
-- Each part ends with pp.emit net of pp.begin (per round, begin+emit minus
-- begin alone; min/median/max over the rounds) against the target of issue
-- #17: at most 0.5 us median with the record unused, sink "none" and a file.
-- Two parts: "steady", rounds of 2,000 records with the default buffer (as
-- a dispatcher's rate lets the writer keep up), and "burst", rounds of
-- records-per-round with a buffer that holds one (256 MiB: 200,000 records
-- take 70 MB, more than the caches hold). Files are flushed between rounds,
-- untimed; a variant with a line dropped or failed in any round, or a flush
-- that timed out, has no figures (its row says why), and the exit status is
-- 1 (also when the C half had such a row).
--   lua5.4 bench/emit_cost.lua [records-per-round] [rounds]   (make bench runs it)
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
package.cpath = here .. "/../?.so;" .. package.cpath
local pp = require "phaseprobe"
local rounds = require "rounds"

local N = math.tointeger(tonumber(arg[1] or "")) or 200000
local R = math.tointeger(tonumber(arg[2] or "")) or 9
-- The steady case: rounds of 2,000 records with the default 1 MiB buffer,
-- which the writer recycles as a dispatcher's rate lets it (a record every
-- 100 us leaves 500 in the 50 ms between the writer's rounds): the chunks
-- stay in the caches. A round of 200,000 streams 70 MB through memory
-- while the writer falls behind, and every record's copy misses them.
local STEADY_N, STEADY_R = 2000, 101
local path = os.tmpname()

local p = io.popen("build/bench_emit_cost 20000 9")
io.write(p:read("a"))
local c_ok, _, c_code = p:close()
assert(c_ok or c_code == 1, "build/bench_emit_cost failed (run make first)")
local invalid = not c_ok
print()
print(rounds.clock_note(pp))

pp.enable()
pp.use(pp.default_schema())
pp.tag("device", "0")
local begin, emit, abs = pp.begin, pp.emit, math.abs
local big = { buffer = 256 << 20 }

local function sink(target, store, opts)
  return function()
    if target == "file" then
      io.open(path, "w"):close()
      assert(pp.sink(path, opts or big))
    else
      pp.sink("none")
    end
    pp.store.clear()
    pp.store.capacity(N)
    pp.store.enable(store)
  end
end
-- Lines dropped or failed so far.
local function lost_now()
  local st = pp.stats()
  return st.lines_dropped + st.line_failures
end

-- A variant whose rounds are checked: setup notes the losses so far, after
-- flushes (untimed) and counts the round's losses and a flush that timed out.
local function checked(v)
  local setup = v.setup
  v.lost, v.lost_rounds, v.flush_rounds = 0, 0, 0
  v.setup = function()
    if setup then setup() end
    v.lost0 = lost_now()
  end
  v.after = function()
    if not pp.flush(10000) then v.flush_rounds = v.flush_rounds + 1 end
    local d = lost_now() - v.lost0
    v.lost = v.lost + d
    if d > 0 then v.lost_rounds = v.lost_rounds + 1 end
  end
  return v
end

-- One measurement: the variants in alternating rounds of n records, the
-- file sink with `opts`; prints the rows and the net figures against the
-- target, and says whether a row is not valid.
local function measure(title, n, r, opts)
  local variants = rounds.run({
    { name = "bare Lua-to-C call math.abs(1)", run = function(k) for _ = 1, k do abs(1) end end },
    checked { name = "pp.begin() alone", setup = sink("none", false),
      run = function(k) for _ = 1, k do begin() end end },
    checked { name = "pp.begin(); pp.emit(), sink none, store off", setup = sink("none", false),
      run = function(k) for _ = 1, k do begin(); emit() end end },
    checked { name = "pp.begin(); pp.emit(), file, store off", setup = sink("file", false, opts),
      run = function(k) for _ = 1, k do begin(); emit() end end },
    checked { name = "pp.begin(); pp.emit(), file, store on", setup = sink("file", true, opts),
      run = function(k) for _ = 1, k do begin(); emit() end end },
  }, r, n, pp.now)
  local bad = false
  for _, v in ipairs(variants) do
    if (v.lost_rounds or 0) > 0 or (v.flush_rounds or 0) > 0 then
      v.invalid = ("NOT VALID: %d lines dropped or failed in %d of %d rounds; %d flushes between rounds timed out")
        :format(v.lost, v.lost_rounds, r, v.flush_rounds)
      bad = true
    end
  end
  print()
  print(("%s: %d calls a round, %d rounds"):format(title, n, r))
  rounds.print("ns per iteration (Lua)", variants, 1)
  -- pp.emit alone: each round's begin+emit less that round's begin alone
  local begin_only = variants[2]
  print()
  print(("%-46s %9s %9s %9s"):format("pp.emit net of pp.begin (ns), " .. title, "min", "median", "max"))
  for i = 3, #variants do
    local v = variants[i]
    if v.invalid or begin_only.invalid then
      print(("%-46s %s"):format(v.name:gsub("^pp.begin%(%); ", ""), "no figure (a row above is NOT VALID)"))
      goto next
    end
    local net = {}
    for k = 1, #v.per do net[k] = v.per[k] - begin_only.per[k] end
    local sm = pp.numeric.summary(net)
    local med = sm.median
    print(("%-46s %9.1f %9.1f %9.1f  %s"):format(v.name:gsub("^pp.begin%(%); ", ""), sm.min, med, sm.max,
      med <= 500 and "(target 500: met)" or "(target 500: MISSED)"))
    ::next::
  end
  return bad
end

invalid = measure("steady", STEADY_N, STEADY_R, nil) or invalid
invalid = measure("burst", N, R, big) or invalid
pp.sink("none")
os.remove(path)
local st = pp.stats()
print(("lines written %d, dropped %d, failed %d%s"):format(st.lines_written, st.lines_dropped,
  st.line_failures, invalid and ": the rows marked NOT VALID have no figures" or ""))
if invalid then os.exit(1) end
