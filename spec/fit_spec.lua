-- Line fits (least squares beside Theil-Sen) and scaling verdicts, on
-- constructed data with known answers.
local fit = require "phaseprobe.analysis.fit"
local records = require "phaseprobe.records"
local numbers = require "helpers.numbers"
local near = numbers.near

describe("fit.line", function()
  it("samples a large input without seeing one phase of a repeating pattern only", function()
    -- 200,000 points: past the exact limit, the subsample takes 1 point in
    -- 3, and the three program sizes come in turn (period 3), as a
    -- dispatcher that cycles through shapes writes them
    local xs, ys = {}, {}
    local sizes = { 100, 1000, 5000 }
    for i = 1, 200000 do
      local x = sizes[(i - 1) % 3 + 1]
      xs[i], ys[i] = x, 20000 + 130 * x + ((i * 7919) % 2001 - 1000)
    end
    local f = fit.line(xs, ys)
    assert.is_true(f.ts.sampled)
    assert.is_true(math.abs(f.ts.slope - 130) < 1, "TS slope " .. f.ts.slope)
    assert.is_true(math.abs(f.ts.intercept - 20000) < 500, "TS intercept " .. f.ts.intercept)
    assert.is_true(f.ts.quality > 0.9, "quality " .. f.ts.quality)
    assert.is_true(math.abs(f.ymedian - (20000 + 130 * 1000)) < 2000, "median " .. f.ymedian)
  end)

  it("recovers slope and intercept of an exact line by both methods", function()
    local xs, ys = {}, {}
    for x = 1, 10 do xs[x], ys[x] = x, 500 + 3 * x end
    numbers.exact_line(fit.line(xs, ys), { n = 10, slope = 3, intercept = 500, pairs = 45,
      xmin = 1, xmax = 10, ymedian = 516.5 })
  end)

  it("keeps Theil-Sen on the line when one point is far off, while least squares moves", function()
    local xs, ys = {}, {}
    for x = 1, 10 do xs[x], ys[x] = x, 500 + 3 * x end
    ys[10] = 100000
    local f = fit.line(xs, ys)
    -- 36 of the 45 pairwise slopes are exactly 3; 9 of 10 residuals are 500
    assert.are.equal(3, f.ts.slope)
    assert.are.equal(500, f.ts.intercept)
    assert.is_true(f.ls.slope > 1000)
    assert.is_true(f.ls.r2 < 0.5)
  end)

  it("samples pairs past 200000 and still finds an exact line", function()
    local xs, ys = {}, {}
    for i = 1, 1000 do xs[i], ys[i] = i, 7 + 2 * i end
    local f = fit.line(xs, ys)
    assert.is_true(f.ts.sampled)
    assert.are.equal(100000, f.ts.pairs)
    assert.are.equal(2, f.ts.slope)
    assert.are.equal(7, f.ts.intercept)
    near(f.ls.slope, 2, 1e-9)
  end)

  it("skips pairs with equal x, and says when no slope can be told", function()
    local f = fit.line({ 1, 1, 2, 2 }, { 10, 12, 20, 22 })
    assert.are.equal(4, f.ts.pairs) -- the 2 same-x pairs are left out
    assert.are.equal(10, f.ts.slope)
    assert.are.equal(1, fit.line({ 4, 4, 4 }, { 1, 2, 3 }).distinct_x)
    local flat = fit.line({ 4, 4, 4 }, { 1, 2, 9 })
    assert.is_false(flat.ok)
    assert.are.equal(2, flat.ts.intercept) -- the median level
    assert.are.equal(0, fit.effect(flat))
  end)

  it("rates a line that explains nothing of y at quality 0", function()
    local xs, ys = {}, {}
    for i = 1, 20 do xs[i], ys[i] = i, (i % 2 == 0) and 100 or 0 end
    local f = fit.line(xs, ys)
    assert.are.equal(0, f.ts.quality)
    assert.has_error(function() fit.line({ 1, 2 }, { 1 }) end)
    assert.has_error(function() fit.line({ 1, "x" }, { 1, 2 }) end)
  end)
end)

-- 30 dispatches: nodes 100..1000 three times; ptx_bytes moves with nodes;
-- grid_blocks is the repetition (1, 2, 3), unrelated to the times.
local function constructed()
  local lines, i = {}, 0
  for rep = 1, 3 do
    for k = 1, 10 do
      i = i + 1
      local nodes = 100 * k
      local jitter = (i % 3) - 1
      local noise = (i % 3 == 0) and 0 or ((i % 2 == 0) and 100000 or -100000)
      local ph = {
        prepare_ns = 700 + jitter,
        ptx_ns = 1000 + 5 * nodes + jitter,
        lease_ns = 120000 + 50 * nodes + noise,
        release_ns = 100000 - 50 * nodes,
        readback_ns = 0,
      }
      local named = ph.prepare_ns + ph.ptx_ns + ph.lease_ns + ph.release_ns
      lines[#lines + 1] = string.format(
        "t seq=%d nodes=%d ptx_bytes=%d grid_blocks=%d wall_ns=%d kernel_ns=0 prepare_ns=%d "
          .. "ptx_ns=%d lease_ns=%d release_ns=%d readback_ns=0 sub_ptx_walk_ns=%d "
          .. "named_host_ns=%d unattributed_ns=100",
        i, nodes, 30 * nodes, rep, named + 100, ph.prepare_ns, ph.ptx_ns, ph.lease_ns,
        ph.release_ns, 4 * nodes, named)
    end
  end
  return (records.from_string(table.concat(lines, "\n")))
end

describe("fit.verdict", function()
  local set = constructed()
  local Q = { "nodes", "ptx_bytes", "grid_blocks" }

  it("says a phase that grows with a quantity scales with it, with its per-unit cost", function()
    local v = fit.verdict(set, "ptx_ns", Q)
    assert.are.equal("scales with nodes", v.verdict)
    assert.are.equal("nodes", v.quantity)
    near(v.ns_per_unit, 5, 0.01)
    near(v.fixed_ns, 1000, 2)
    assert.is_true(v.quality > 0.9)
    assert.are.same({ "ptx_bytes" }, v.also) -- moves with nodes
    local nested = fit.verdict(set, "sub_ptx_walk_ns", Q)
    assert.are.equal("scales with nodes", nested.verdict)
    assert.are.equal(4, nested.ns_per_unit)
    assert.are.equal(0, nested.fixed_ns)
  end)

  it("says a phase that no quantity moves is fixed per dispatch", function()
    local v = fit.verdict(set, "prepare_ns", Q)
    assert.are.equal("fixed per dispatch", v.verdict)
    assert.are.equal(700, v.fixed_ns)
    assert.are.equal(0, v.ns_per_unit)
    assert.matches("no quantity moves it by 20%%", v.reason)
  end)

  it("is inconclusive, and says why, on a poor fit, a falling time or a phase never charged", function()
    local poor = fit.verdict(set, "lease_ns", Q)
    assert.are.equal("inconclusive", poor.verdict)
    assert.matches("poor fit against nodes", poor.reason)
    local falls = fit.verdict(set, "release_ns", Q)
    assert.are.equal("inconclusive", falls.verdict)
    assert.matches("falls as nodes grows", falls.reason)
    local zero = fit.verdict(set, "readback_ns", Q)
    assert.are.equal("inconclusive", zero.verdict)
    assert.matches("always 0", zero.reason)
  end)

  it("tests the quantities that vary and notes the ones that do not", function()
    local one = set:where("nodes", 500) -- nodes 1 value, grid_blocks 3
    local v = fit.verdict(one, "ptx_ns", { "nodes", "grid_blocks" }, { min_n = 3 })
    assert.are.equal("fixed per dispatch", v.verdict)
    assert.are.same({ "untested (too little support): nodes" }, v.notes)
  end)

  it("needs min_distinct values of some quantity", function()
    local two = set:where{ nodes = { 100, 200 } }
    local v = fit.verdict(two, "ptx_ns", { "nodes" })
    assert.are.equal("inconclusive", v.verdict)
    assert.are.equal("no quantity has the support to decide (need 3 values each on 5% of the "
      .. "records or 30 records; most values: nodes with 2)", v.reason)
    local few = set:head(4)
    assert.are.equal("too few records (4, need 5)", fit.verdict(few, "ptx_ns", Q).reason)
    local relaxed = fit.verdict(two, "ptx_ns", { "nodes" }, { min_distinct = 2 })
    assert.are.equal("scales with nodes", relaxed.verdict)
  end)
end)
