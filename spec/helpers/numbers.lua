-- numbers.lua: assertions on figures that specs share: near, and the check
-- of a line fit (pp.numeric.fit, fit.line) of an exact line.
local assert = require "luassert"

local M = {}

-- Asserts |a - b| <= tol (1e-9 unless given).
function M.near(a, b, tol)
  assert.is_true(math.abs(a - b) <= (tol or 1e-9), string.format("%.12g vs %.12g", a, b))
end
local near = M.near

-- Asserts that fit f recovered an exact line, y = want.intercept +
-- want.slope * x over want.n points of distinct x: least squares within
-- 1e-9 and with r2 1, Theil-Sen exactly and with quality 1 over all
-- want.pairs pairs (none sampled), and the points' extent (want.xmin,
-- want.xmax) and median y (want.ymedian).
function M.exact_line(f, want)
  assert.is_true(f.ok)
  assert.are.equal(want.n, f.n)
  assert.are.equal(want.n, f.distinct_x)
  near(f.ls.slope, want.slope)
  near(f.ls.intercept, want.intercept)
  near(f.ls.r2, 1)
  assert.are.equal(want.slope, f.ts.slope)
  assert.are.equal(want.intercept, f.ts.intercept)
  assert.are.equal(1, f.ts.quality)
  assert.are.equal(want.pairs, f.ts.pairs)
  assert.is_false(f.ts.sampled)
  assert.are.equal(want.xmin, f.xmin)
  assert.are.equal(want.xmax, f.xmax)
  assert.are.equal(want.ymedian, f.ymedian)
end

return M
