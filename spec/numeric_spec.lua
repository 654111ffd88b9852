-- pp.numeric: the Lua binding of the one statistics implementation
-- (csrc/stats/numeric.c), over plain sequences of numbers.
local pp = require "phaseprobe"
local numbers = require "helpers.numbers"

local function near(a, b) return math.abs(a - b) <= 1e-9 * math.max(1, math.abs(a), math.abs(b)) end

describe("pp.numeric", function()
  it("is a table of its own, beside pp.stats() (the emission counters)", function()
    assert.are.equal("table", type(pp.numeric))
    assert.are.equal("function", type(pp.stats))
    assert.are.equal("number", type(pp.stats().emitted))
  end)

  it("summarises a sequence: type-7 quantiles, mean, extremes, sum", function()
    local s = pp.numeric.summary({ 50, 10, 40, 20, 30, 60 })
    assert.are.equal(6, s.count)
    assert.are.equal(35, s.median) -- the mean of the middle two
    assert.are.equal(35, s.mean)
    assert.are.equal(10, s.min)
    assert.are.equal(60, s.max)
    assert.are.equal(210, s.sum)
    assert.is_true(near(s.p90, 55))
    assert.is_true(near(s.p99, 59.5))
  end)

  it("gives the column store's summary of the same values", function()
    local vals, lines = {}, {}
    for i = 1, 37 do
      vals[i] = (i * 7919) % 101 + i / 8
      lines[i] = ("p x=%.17g"):format(vals[i])
    end
    local a = pp.numeric.summary(vals)
    local b = pp.parse.string(table.concat(lines, "\n") .. "\n"):summary("x")
    for _, k in ipairs { "count", "min", "max", "sum", "mean", "median", "p90", "p99" } do
      assert.is_true(near(a[k], b[k]), k .. ": " .. tostring(a[k]) .. " vs " .. tostring(b[k]))
    end
  end)

  it("leaves NaN out of every figure, wherever it stands, and counts it (#13 item 11)", function()
    local nan = 0 / 0
    local want = pp.numeric.summary({ 1, 2 })
    for _, xs in ipairs { { nan, 1, 2 }, { 1, nan, 2 }, { 1, 2, nan }, { nan, 2, nan, 1, nan } } do
      local s = pp.numeric.summary(xs)
      for _, k in ipairs { "count", "min", "max", "sum", "mean", "median", "p90", "p99" } do
        assert.are.equal(want[k], s[k], k)
      end
      assert.are.equal(#xs - 2, s.nan)
    end
    assert.is_nil(want.nan)
    local none = pp.numeric.summary({ nan, nan })
    assert.are.same({ 0, 2 }, { none.count, none.nan })
    assert.is_nil(none.median)
    -- infinities are values
    local inf = pp.numeric.summary({ 1, math.huge, -math.huge })
    assert.are.same({ 3, -math.huge, math.huge, 1 }, { inf.count, inf.min, inf.max, inf.median })
    -- and in a fit, a point with a NaN coordinate is no point
    local f = pp.numeric.fit({ 1, 2, nan, 3, 4 }, { 12, 14, 99, 16, nan })
    local g = pp.numeric.fit({ 1, 2, 3 }, { 12, 14, 16 })
    assert.are.same({ 3, 2 }, { f.n, f.nan })
    assert.is_true(near(g.ls.slope, f.ls.slope) and near(g.ts.slope, f.ts.slope))
    assert.are.equal(2, f.ts.slope)
  end)

  it("interpolates between infinities as the line through them does (#13)", function()
    local inf, nan = math.huge, 0 / 0
    local function is_nan(x) return x ~= x end
    local function summary_any_order(xs)
      local s = pp.numeric.summary(xs)
      local r = {}
      for i = #xs, 1, -1 do r[#r + 1] = xs[i] end
      local t = pp.numeric.summary(r)
      for _, k in ipairs { "median", "p90", "p99", "mean" } do
        assert.is_true(s[k] == t[k] or (is_nan(s[k]) and is_nan(t[k])), k)
      end
      return s
    end
    -- one endpoint infinite: every point strictly between is that infinity
    local s = summary_any_order { -inf, 1 }
    assert.are.same({ -inf, -inf, -inf, -inf }, { s.median, s.p90, s.p99, s.mean })
    s = summary_any_order { 1, inf }
    assert.are.same({ inf, inf, inf, inf }, { s.median, s.p90, s.p99, s.mean })
    s = summary_any_order { 1, 2, inf }
    assert.are.same({ 2, inf, inf }, { s.median, s.p90, s.p99 })
    s = summary_any_order { -inf, 5, 6, 7, 8, 9, 10, 11, 12, 13 }
    assert.are.equal(8.5, s.median)
    -- equal infinite endpoints: that infinity
    s = summary_any_order { -inf, -inf }
    assert.are.same({ -inf, -inf, -inf }, { s.median, s.p90, s.mean })
    s = summary_any_order { inf, inf, inf, 0 }
    assert.are.same({ inf, inf, inf }, { s.median, s.p90, s.mean })
    -- -inf to +inf: no value between is more right than another
    s = summary_any_order { -inf, inf }
    assert.is_true(is_nan(s.median) and is_nan(s.p90) and is_nan(s.mean))
    assert.are.same({ 2, -inf, inf }, { s.count, s.min, s.max })
    -- at a rank that falls on a value, that value, whatever lies beside it
    s = summary_any_order { -inf, 0, inf }
    assert.are.same({ 0, inf }, { s.median, s.p90 })
    assert.is_true(is_nan(s.mean))
  end)

  it("keeps medians and means of finite values finite where their differences or sums overflow", function()
    local big = 1.7976931348623157e308
    local s = pp.numeric.summary { -big, big }
    assert.are.equal(0, s.median)
    assert.are.equal(0, s.mean)
    s = pp.numeric.summary { big, big }
    assert.are.same({ big, big, big }, { s.median, s.mean, s.p90 })
    assert.are.equal(math.huge, s.sum) -- the sum itself is past every double
    s = pp.numeric.summary { big, big / 2 }
    assert.is_true(near(s.mean, 0.75 * big) and near(s.median, 0.75 * big))
    s = pp.numeric.summary { -big, big, big }
    assert.are.equal(big, s.median)
    assert.is_true(near(s.mean, big / 3))
    assert.is_true(near(s.p90, big))
  end)

  it("claims no fit over an infinite value that it cannot know", function()
    local inf = math.huge
    local function is_nan(x) return x ~= x end
    local f = pp.numeric.fit({ 1, 2, 3, 4 }, { 1, 2, 3, inf })
    assert.is_true(is_nan(f.ls.slope) and is_nan(f.ls.intercept) and is_nan(f.ls.r2), "ls")
    assert.is_true(is_nan(f.ts.r2), "ts r2")
    -- Theil-Sen's median of slopes still sees through one infinite outlier
    f = pp.numeric.fit({ 1, 2, 3, 4, 5 }, { 1, 2, 3, 4, -inf })
    assert.are.same({ 1, 0 }, { f.ts.slope, f.ts.intercept })
    assert.is_true(is_nan(f.ls.slope) and is_nan(f.ls.r2) and is_nan(f.ts.r2))
    f = pp.numeric.fit({ 1, 2, inf }, { 1, 2, 3 })
    assert.is_true(is_nan(f.ls.slope) and is_nan(f.ls.r2), "an infinite x")
    assert.are.equal(true, f.ok)
  end)

  it("summarises nothing as count 0 and no other field", function()
    local s = pp.numeric.summary({})
    assert.are.equal(0, s.count)
    assert.is_nil(s.median)
  end)

  it("fits a line: least squares beside Theil-Sen", function()
    numbers.exact_line(pp.numeric.fit({ 1, 2, 3, 4 }, { 12, 14, 16, 18 }),
      { n = 4, slope = 2, intercept = 10, pairs = 6, xmin = 1, xmax = 4, ymedian = 15 })
  end)

  it("lets one outlier move least squares but not Theil-Sen", function()
    local xs, ys = {}, {}
    for i = 1, 20 do xs[i], ys[i] = i, 100 + 3 * i end
    ys[20] = 10000
    local f = pp.numeric.fit(xs, ys)
    assert.is_true(near(f.ts.slope, 3))
    assert.is_true(f.ls.slope > 30)
  end)

  it("tells no slope from one distinct x, and keeps the level", function()
    local f = pp.numeric.fit({ 5, 5, 5 }, { 1, 2, 6 })
    assert.is_false(f.ok)
    assert.are.equal(0, f.ts.slope)
    assert.are.equal(0, f.ls.slope)
    assert.are.equal(3, f.ls.intercept) -- the mean
    assert.are.equal(2, f.ts.intercept) -- the median
    local e = pp.numeric.fit({}, {})
    assert.are.equal(0, e.n)
    assert.is_false(e.ok)
    assert.is_nil(e.ls)
  end)

  it("raises on misuse, naming the argument and the element", function()
    local ok, err = pcall(pp.numeric.summary, "12")
    assert.is_false(ok)
    assert.truthy(err:find("bad argument #1", 1, true), err)
    ok, err = pcall(pp.numeric.summary, { 1, 2, "x" })
    assert.is_false(ok)
    assert.truthy(err:find("element 3 is string, not a number", 1, true), err)
    ok, err = pcall(pp.numeric.fit, { 1, 2 }, { 1 })
    assert.is_false(ok)
    assert.truthy(err:find("bad argument #2", 1, true) and err:find("differ in length", 1, true), err)
    ok, err = pcall(pp.numeric.fit, { 1 }, { true })
    assert.is_false(ok)
    assert.truthy(err:find("element 1 is boolean", 1, true), err)
  end)

  it("replaces pp.parse.summarize and pp.parse.fit_line", function()
    assert.is_nil(rawget(pp.parse, "summarize"))
    assert.is_nil(rawget(pp.parse, "fit_line"))
  end)
end)
