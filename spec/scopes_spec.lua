-- Scopes (pp.phase, pp.measure, C's PP_MEASURE) under the nesting rule: on a
-- thread at most one scope accumulates at any instant, the most recently
-- opened one still open, whatever coroutine opened it; nested regions pause
-- nothing. Each scope below spins a known time (measured with pp.now() around
-- the spin), so every phase's charge is checked against what it ran.
local pp = require "phaseprobe"
local shell = require "helpers.shell"
local probe = require "helpers.probe"
local fresh = probe.fresh

-- Spins ns on the probe clock; returns what it took, on the probe clock.
local now = pp.now
local function spin(ns)
  local t0 = now()
  local t = t0
  while t - t0 < ns do t = now() end
  return t - t0
end

-- |got - want| within slack, where slack is what the dispatch spent outside
-- the spins (wall - spun): a double charge adds at least one whole spin.
local function near(got, want, slack, what)
  assert(got >= want - 64 and got <= want + slack,
    ("%s: charged %d ns, ran %d ns (slack %d ns)"):format(what, got, want, slack))
end

-- Ends the dispatch and checks each charge against what it ran: spun is
-- the sum of the dispatch's spins (the slack is what it spent outside
-- them), want a list of { field without its _ns, ns ran }. Returns the
-- record.
local function settled(spun, want)
  pp.finish()
  local r = pp.emit()
  local slack = r.wall_ns - spun
  for _, w in ipairs(want) do near(r[w[1] .. "_ns"], w[2], slack, w[1]) end
  return r
end

-- The body of a coroutine that opens `phase` as a scope, spins ns and
-- yields what the spin took; resumed, it runs `rest` (when given) inside
-- the scope, and returns what rest returns as the scope closes.
local function scope_then_yield(phase, ns, rest)
  return function()
    local _ <close> = pp.phase(phase)
    coroutine.yield(spin(ns))
    if rest then return rest() end
  end
end

-- One dispatch: `outer` (a scope) opened around a spin, then `inner` opened
-- inside it around a second; the record and the two spins.
local function one_inside(outer, inner)
  pp.begin()
  local a, b
  do
    local _ <close> = outer()
    a = spin(200000)
    do
      local _i <close> = inner()
      b = spin(300000)
    end
  end
  pp.finish()
  return pp.emit(), a, b
end

describe("the nesting rule", function()
  before_each(fresh)

  it("a phase opened inside another pauses it: each is charged its own time", function()
    pp.begin()
    local a, b, c
    do
      local _ <close> = pp.phase("prepare")
      a = spin(300000)
      do
        local _p <close> = pp.phase("ptx")
        b = spin(400000)
      end
      c = spin(200000)
    end
    local r = settled(a + b + c, { { "prepare", a + c }, { "ptx", b } })
    assert.is_true(r.named_host_ns <= r.wall_ns)
    assert.are.equal(r.wall_ns, r.named_host_ns + r.unattributed_ns)
  end)

  it("pp.measure nests the same way, inside a scope and around one", function()
    pp.begin()
    local a, b, c, d = 0, 0, 0, 0
    pp.measure("stage", function()
      a = spin(200000)
      do
        local _ <close> = pp.phase("resolve")
        b = spin(300000)
        pp.measure("lease", function() c = spin(250000) end)
      end
      d = spin(100000)
    end)
    local r = settled(a + b + c + d, { { "stage", a + d }, { "resolve", b }, { "lease", c } })
    assert.is_true(r.named_host_ns <= r.wall_ns)
  end)

  it("the same phase opened inside itself is charged once", function()
    local r, a, b = one_inside(function() return pp.phase("ptx") end, function() return pp.phase("ptx") end)
    near(r.ptx_ns, a + b, r.wall_ns - (a + b), "ptx")
    assert.is_true(r.named_host_ns <= r.wall_ns)
  end)

  it("nested regions pause nothing: measured inside their phase", function()
    local r, a, b = one_inside(function() return pp.phase("ptx") end,
      function() return pp.nested("ptx_digest") end)
    local slack = r.wall_ns - (a + b)
    near(r.ptx_ns, a + b, slack, "ptx")
    near(r.sub_ptx_digest_ns, b, slack, "sub_ptx_digest")
    assert.are.equal(r.ptx_ns, r.named_host_ns)
  end)

  it("a phase inside a nested region pauses the phase, not the region", function()
    pp.begin()
    local a, b
    do
      local _ <close> = pp.phase("ptx")
      local _n <close> = pp.nested("ptx_vsa")
      a = spin(200000)
      do
        local _m <close> = pp.phase("modkey")
        b = spin(300000)
      end
    end
    settled(a + b, { { "ptx", a }, { "modkey", b }, { "sub_ptx_vsa", a + b } })
  end)

  it("an error through nested scopes charges each its own time", function()
    pp.begin()
    local a, b = 0, 0
    local ok = pcall(function()
      local _ <close> = pp.phase("release")
      a = spin(200000)
      pp.measure("readback", function()
        b = spin(300000)
        error("boom")
      end)
    end)
    assert.is_false(ok)
    settled(a + b, { { "release", a }, { "readback", b } })
  end)

  it("explicit charges stay the caller's: add_ns and lap inside a scope pause nothing", function()
    pp.begin()
    local a
    do
      local _ <close> = pp.phase("prepare")
      pp.add_ns("ptx", 5000)
      a = spin(200000)
    end
    local r = settled(a, { { "prepare", a } })
    assert.are.equal(5000, r.ptx_ns)
  end)
end)

describe("scope objects", function()
  before_each(fresh)

  it("close their own scope once: a second close does nothing", function()
    pp.begin()
    local s = pp.phase("ptx")
    local a = spin(200000)
    local close = getmetatable(s).__close
    close(s)
    local b = spin(200000)
    close(s)
    do
      local _ <close> = pp.phase("stage")
      close(s)  -- still nothing: the stage scope runs on
      spin(100000)
    end
    local r = settled(a + b, { { "ptx", a } })
    assert.is_true(r.stage_ns >= 100000)
  end)

  it("refuse to close anything else", function()
    local s = pp.phase("ptx")
    local close = getmetatable(s).__close
    for _, other in ipairs { io.stdout, {}, 1, "x" } do
      local ok, err = pcall(close, other)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("phaseprobe.scope expected", 1, true), tostring(err))
    end
    close(s)
    pp.emit { wall_ns = 0 }
  end)
end)

describe("the pool of scope objects", function()
  before_each(fresh)

  it("hands a scope's object out again after its <close> variable closed it", function()
    pp.begin()
    local first, second
    do local s <close> = pp.phase("ptx"); first = s end
    do local s <close> = pp.phase("ptx"); second = s end
    assert.are.equal(first, second)
    pp.emit { wall_ns = 0 }
  end)

  it("never hands out again an object closed by hand, and lets it be collected", function()
    pp.begin()
    local gone = setmetatable({}, { __mode = "k" })
    for _ = 1, 200 do
      local s = pp.phase("ptx")
      getmetatable(s).__close(s)
      gone[s] = true
    end
    local seen = {}
    for _ = 1, 100 do
      local s <close> = pp.phase("stage")
      assert.is_nil(gone[s], "a hand-closed object came back")
      seen[s] = true
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.are.equal(1, n) -- the pool still serves: one object, reused
    seen = nil
    collectgarbage(); collectgarbage()
    assert.is_nil(next(gone), "hand-closed objects are still held")
    pp.emit { wall_ns = 0 }
  end)

  it("more scopes open at once than the pool holds each end their own", function()
    pp.begin()
    local cos, a = {}, 0
    for i = 1, 100 do -- 100 scopes open at once, out of a pool of 64
      cos[i] = coroutine.create(function()
        local _ <close> = pp.nested("ptx_digest")
        coroutine.yield()
      end)
      assert(coroutine.resume(cos[i]))
    end
    for i = 100, 1, -1 do a = a + spin(2000); assert(coroutine.resume(cos[i])) end
    local objs = {}
    for _ = 1, 3 do
      local s <close> = pp.phase("ptx")
      objs[s] = true
    end
    local n = 0
    for _ in pairs(objs) do n = n + 1 end
    assert.are.equal(1, n)
    local r = pp.emit()
    assert.is_true(r.sub_ptx_digest_ns >= a, tostring(r.sub_ptx_digest_ns)) -- the first spans every spin
  end)
end)

describe("scopes and coroutines", function()
  before_each(fresh)

  it("a scope closed in a resumed coroutine ends its own scope, not the caller's", function()
    pp.begin()
    local co = coroutine.wrap(scope_then_yield("ptx", 300000))
    local _ <close> = pp.phase("prepare")
    local a = spin(200000)
    local b = co()            -- ptx opens inside prepare: prepare pauses
    co()                      -- ptx closes: prepare resumes
    local c = spin(250000)
    local r = settled(a + b + c, { { "prepare", a + c }, { "ptx", b } })
    assert.is_true(r.named_host_ns <= r.wall_ns)
  end)

  it("coroutine.close ends the coroutine's scope and leaves the caller's open", function()
    pp.begin()
    local a, b, c
    local co = coroutine.create(scope_then_yield("ptx", 300000, function() error("never resumed") end))
    do
      local _ <close> = pp.phase("prepare")
      a = spin(200000)
      local resumed
      resumed, b = coroutine.resume(co)
      assert(resumed, b)
      assert(coroutine.close(co))
      c = spin(250000)
    end
    settled(a + b + c, { { "prepare", a + c }, { "ptx", b } })
  end)

  it("an out-of-order close removes the scope and keeps the others consistent", function()
    pp.begin()
    local b, c, d
    -- the coroutine opens prepare and yields; the caller opens ptx on top;
    -- the coroutine then closes prepare (not on top) while ptx is running
    local co = coroutine.wrap(scope_then_yield("prepare", 200000))
    local a = co()
    do
      local _ <close> = pp.phase("ptx")
      b = spin(300000)
      co()                    -- prepare closes below ptx: ptx keeps running
      c = spin(250000)
    end
    d = spin(100000)          -- no scope open: unattributed
    local r = settled(a + b + c + d, { { "prepare", a }, { "ptx", b + c } })
    assert.is_true(r.unattributed_ns >= d)
    assert.is_true(r.named_host_ns <= r.wall_ns)
  end)

  it("a coroutine's scope left open across the caller's whole scope is paused by it", function()
    pp.begin()
    local b
    local co = coroutine.wrap(scope_then_yield("stage", 200000, function() return spin(150000) end))
    local a = co()
    do
      local _ <close> = pp.phase("launch")
      b = spin(300000)
    end
    local c = co()
    settled(a + b + c, { { "stage", a + c }, { "launch", b } })
  end)
end)

describe("scopes from C (PP_MEASURE, pp_scope_open/close)", function()
  it("nest, close out of order, close at pp_end/pp_emit, and stay per thread", function()
    shell.checks_pass("build/scopes_helper 2>&1", { "nested PP_MEASURE", "out-of-order close",
      "another thread's scope", "pp_end closes open scopes", "pp_emit closes open scopes",
      "more scopes than PP_SCOPE_DEPTH", "disabled between open and close" })
  end)
end)

-- Randomised scope programs: phases opened as <close> scopes and through
-- pp.measure, nested regions, errors unwinding through scopes, coroutines
-- that open a scope, yield and are later resumed (closing it out of order)
-- or closed with coroutine.close, some only after their dispatch was
-- emitted. Every scope spins a known time. A model stack kept beside the
-- probe's says which phase runs at each instant, and every probe call that
-- opens or closes a scope is bracketed by two clock readings (a, b), so the
-- probe's own reading for it lies in [a, b]: each phase's charge then has an
-- exact lower bound (its stretches as running scope, edges taken inside the
-- brackets) and upper bound (edges outside), and so has each nested region.
-- Every record is checked exactly (named_host_ns is the plain sum,
-- named + unattributed == wall, named <= wall) and every phase and region
-- against its bounds. The spins last at least 3x the usual width of the
-- bounds, so on a dispatch whose bounds are narrower than half the shortest
-- spin ("decisive": most of them) a double charge, a lost resume or a charge
-- to the wrong scope cannot hide in the tolerance.
local function scope_programs(dispatches, seed)
  local PH = { "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release", "readback" }
  local NE = { "ptx_digest", "ptx_vsa" }
  local rng = math.random
  math.randomseed(seed)
  local M = {}                   -- model: the open phase scopes, bottom first
  local seg_lo, seg_hi           -- bracket of the running scope's stretch start
  local LO, HI, NLO, NHI, SPUN = {}, {}, {}, {}, {}
  local pending = {}             -- suspended coroutines holding a scope
  local live = {}                -- model handles of this dispatch
  local closing                  -- handle whose close began (its a reading)
  local in_pcall, budget = 0, 0  -- budget: actions left in this dispatch
  local ndone = 0
  local dmin = 5000
  local RAISE = {}

  -- the running scope's stretch ends inside [a, b]
  local function stretch_end(a, b)
    local top = M[#M]
    if top then
      LO[top.name] = LO[top.name] + math.max(0, a - seg_hi)
      HI[top.name] = HI[top.name] + (b - seg_lo)
    end
  end
  local function on_close(h, a, b)
    if h.nested then
      NLO[h.name] = NLO[h.name] + math.max(0, a - h.b)
      NHI[h.name] = NHI[h.name] + (b - h.a)
      return
    end
    if M[#M] == h then
      stretch_end(a, b)
      M[#M] = nil
      seg_lo, seg_hi = a, b     -- the scope below resumes inside [a, b]
    else
      for i = #M - 1, 1, -1 do  -- out of order: it was paused; it leaves
        if M[i] == h then table.remove(M, i); break end
      end
    end
  end
  -- A model handle closes just before the probe's scope (declared after
  -- it); AFTER, declared before it, closes just after: together they bracket
  -- the probe's close. Handles of a finished dispatch record nothing.
  local handle_mt = { __close = function(h)
    if live[h] then live[h] = nil; h.ca = now(); closing = h end
  end }
  local AFTER = setmetatable({}, { __close = function()
    local h = closing
    if h then closing = nil; on_close(h, h.ca, now()) end
  end })
  local function model_open(name, a, nested)
    local b = now()
    local h = setmetatable({ name = name, nested = nested, a = a, b = b }, handle_mt)
    live[h] = true
    if not nested then
      stretch_end(a, b)
      M[#M + 1] = h
      seg_lo, seg_hi = a, b
    end
    return h
  end
  -- Runs fn inside `name` opened through `open` (pp.phase or pp.nested)
  -- and its model handle; the probe's open and close are bracketed.
  local function in_scope(open, name, nested, fn)
    local _a <close> = AFTER
    local a = now()
    local _s <close> = open(name)
    local _m <close> = model_open(name, a, nested)
    fn()
  end
  local function spin_one()
    local el = spin(dmin + rng(0, dmin))
    local top = M[#M]
    if top then SPUN[top.name] = SPUN[top.name] + el end
  end

  local body
  local function died(co, ok, err)
    if not ok then
      if err ~= RAISE then error(err, 0) end
      -- a coroutine that died by an error keeps its to-be-closed variables
      -- until coroutine.close (Lua 5.4): a careful caller closes it
      coroutine.close(co)
    end
  end
  local function start_co(depth)
    local co = coroutine.create(function()
      in_scope(pp.phase, PH[rng(#PH)], false, function()
        body(depth + 1)
        coroutine.yield()
        body(depth + 1)
      end)
    end)
    died(co, coroutine.resume(co))
    if coroutine.status(co) == "suspended" then pending[#pending + 1] = co end
  end
  local function advance_co()
    if #pending == 0 then return spin_one() end
    local co = table.remove(pending, rng(#pending))
    if rng(2) == 1 then
      died(co, coroutine.resume(co))
    else
      local _a <close> = AFTER
      coroutine.close(co)
    end
  end
  body = function(depth)
    for _ = 1, rng(1, 3) do
      if budget <= 0 then return end
      budget = budget - 1
      local k = rng(100)
      if k <= 30 or depth >= 3 then
        spin_one()
      elseif k <= 48 then
        in_scope(pp.phase, PH[rng(#PH)], false, function() body(depth + 1) end)
      elseif k <= 58 then
        local p = PH[rng(#PH)]
        local _a <close> = AFTER
        local a = now()
        pp.measure(p, function()
          local _m <close> = model_open(p, a)
          body(depth + 1)
        end)
      elseif k <= 66 then
        in_scope(pp.nested, NE[rng(#NE)], true, function() body(depth + 1) end)
      elseif k <= 72 then
        in_pcall = in_pcall + 1
        local ok, err = pcall(body, depth + 1)
        in_pcall = in_pcall - 1
        if not ok and err ~= RAISE then error(err, 0) end
      elseif k <= 76 then
        if in_pcall > 0 then error(RAISE) end
        spin_one()
      elseif k <= 90 then
        start_co(depth)
      else
        advance_co()
      end
    end
  end

  local function one(check)
    for _, p in ipairs(PH) do LO[p], HI[p], SPUN[p] = 0, 0, 0 end
    for _, r in ipairs(NE) do NLO[r], NHI[r] = 0, 0 end
    budget = 8
    pp.begin()
    -- scopes of earlier dispatches' coroutines, closed inside this one:
    -- their dispatch was emitted, they charge nothing
    while #pending > 0 and rng(3) == 1 do advance_co() end
    body(0)
    local a = now()
    pp.finish()
    stretch_end(a, now())
    -- the probe closed every scope at finish: so does the model
    M, live, closing = {}, {}, nil
    local r = pp.emit()
    -- some coroutines end after the emit, charging nothing anywhere
    while #pending > 0 and rng(2) == 1 do
      coroutine.close(table.remove(pending, rng(#pending)))
    end
    for i = #pending, 1, -1 do
      if coroutine.status(pending[i]) ~= "suspended" then table.remove(pending, i) end
    end
    -- the collector's work between dispatches, not inside them
    ndone = ndone + 1
    if ndone % 256 == 0 then collectgarbage("collect"); collectgarbage("stop") end
    return check(r)
  end

  local function width()
    local w = 0
    for _, p in ipairs(PH) do w = math.max(w, HI[p] - LO[p]) end
    for _, n in ipairs(NE) do w = math.max(w, NHI[n] - NLO[n]) end
    return w
  end

  collectgarbage("stop")
  -- the usual width of the bounds on this machine, under this build
  local widths = {}
  for i = 1, 300 do one(function() widths[i] = width() end) end
  table.sort(widths)
  dmin = math.max(2000, 3 * widths[math.floor(#widths * 0.9)])

  local stats = { dispatches = 0, decisive = 0, failures = {}, dmin = dmin, seed = seed }
  local function fail(i, msg)
    if #stats.failures < 5 then
      stats.failures[#stats.failures + 1] = ("dispatch %d (seed %d, dmin %d ns): %s"):format(i, seed, dmin, msg)
    end
  end
  local EPS = 64 -- ns rounding of the clock's tick-to-ns conversions
  for i = 1, dispatches do
    one(function(r)
      stats.dispatches = stats.dispatches + 1
      local named = 0
      for _, p in ipairs(PH) do named = named + r[p .. "_ns"] end
      if named ~= r.named_host_ns then fail(i, "named_host_ns is not the sum of the phases") end
      if r.named_host_ns + r.unattributed_ns ~= r.wall_ns then fail(i, "named + unattributed ~= wall") end
      if r.named_host_ns > r.wall_ns then
        fail(i, ("named_host_ns %d > wall_ns %d"):format(r.named_host_ns, r.wall_ns))
      end
      if width() < dmin // 2 then stats.decisive = stats.decisive + 1 end
      for _, p in ipairs(PH) do
        local got = r[p .. "_ns"]
        if got < LO[p] - EPS or got > HI[p] + EPS or got < SPUN[p] - EPS then
          fail(i, ("%s charged %d ns, ran %d..%d ns, spun %d ns"):format(p, got, LO[p], HI[p], SPUN[p]))
        end
      end
      for _, n in ipairs(NE) do
        local got = r["sub_" .. n .. "_ns"]
        if got < NLO[n] - EPS or got > NHI[n] + EPS then
          fail(i, ("sub_%s measured %d ns, ran %d..%d ns"):format(n, got, NLO[n], NHI[n]))
        end
      end
    end)
  end
  for _, co in ipairs(pending) do coroutine.close(co) end
  collectgarbage("restart")
  return stats
end

describe("randomised scope programs", function()
  before_each(function()
    fresh()
    pp.store.enable(false)
  end)
  after_each(function() pp.store.enable(true) end)

  -- n dispatches, and more (up to 4n) while fewer than 0.9n were decisive:
  -- a dispatch whose thread was preempted has wide bounds that say little,
  -- so on a loaded machine it takes more dispatches to check as much
  local function run(n)
    local seed = tonumber(os.getenv("PHASEPROBE_SCOPE_SEED") or "") or os.time()
    local done, decisive, dmins = 0, 0, {}
    for batch = 0, 3 do
      local s = scope_programs(n, seed + batch)
      assert.are.same({}, s.failures)
      assert.are.equal(n, s.dispatches)
      done, decisive = done + s.dispatches, decisive + s.decisive
      dmins[#dmins + 1] = s.dmin
      if decisive >= 0.9 * n then break end
    end
    -- most dispatches must be decisive, or the bounds said little
    assert.is_true(decisive >= 0.9 * n,
      ("only %d of %d dispatches decisive (dmin %s ns, seeds from %d)"):format(decisive, done,
        table.concat(dmins, ", "), seed))
  end

  it("keep the partition and charge each phase what it ran: 2,000 dispatches", function()
    run(2000)
  end)

  it("keep the partition and charge each phase what it ran: 100,000 dispatches #novalgrind", function()
    run(tonumber(os.getenv("PHASEPROBE_SCOPE_DISPATCHES") or "") or 100000)
  end)
end)
