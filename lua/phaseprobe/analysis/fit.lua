--- phaseprobe.analysis.fit: line fits of a phase's time against a counted quantity,
-- and the scaling verdict built on them.
--
--   local fit = require "phaseprobe.analysis.fit"
--   local f = fit.line({1, 2, 3}, {12, 14, 16})      -- plain arrays
--   -- f.ls  = {intercept=10, slope=2, r2=1}          least squares
--   -- f.ts  = {intercept=10, slope=2, quality=1, r2=1, pairs=3, sampled=false}
--   local v = fit.verdict(set, "ptx_ns", {"nodes", "ptx_bytes"})
--   -- v.verdict = "scales with nodes", v.fixed_ns, v.ns_per_unit, v.quality
--
-- Theil-Sen: slope = median of the slopes of all pairs of points with
-- distinct x (a fixed-seed sample of 100000 pairs past 200000 pairs);
-- intercept = median of y - slope * x. Its quality is 1 - MAD(residuals) /
-- MAD(y), clamped to [0, 1]: 1 when the line explains the spread of y, 0
-- when it explains none of it. Least squares is reported beside it; the two
-- disagreeing is a sign of outliers.
--
-- The verdict (per phase, against each quantity with enough distinct
-- values): the fit's effect is the Theil-Sen slope times the quantity's
-- observed range, relative to the phase's median.
--   "scales with Q": effect >= min_effect and quality >= min_quality (the
--       best such Q by quality; others that fit nearly as well are listed
--       in `also`, as happens when quantities move together);
--   "fixed per dispatch": every testable quantity has |effect| < min_effect;
--   "inconclusive": otherwise, with the reason: too few records, always 0,
--       too few distinct values of every quantity, a large effect with a
--       poor fit, or time falling as the quantity grows.
--
-- Where it sits: the one verdict. Record sets give the fits (set:fit, C:
-- least squares and Theil-Sen); analysis.analyze, the HTML report and the
-- demo take their verdicts from here.
local pp = require "phaseprobe"
local report = require "phaseprobe.output.report" -- the one number style, for the reasons

local M = {}

M.defaults = {
  min_n = 5,          -- records needed for any verdict
  min_distinct = 3,   -- distinct values a quantity needs to be tested, each
  min_share = 0.05,   --   on at least this share of the records
  min_records = 30,   --   or on at least this many
  collinear_r2 = 0.98, -- two quantities this tied (R^2 of one on the other) move together
  min_effect = 0.2,   -- effect over the observed range, relative to the median
  min_quality = 0.5,  -- Theil-Sen quality for "scales with"
  agree = 0.5,        -- |LS slope - TS slope| <= agree * |TS slope|, else noted
  also_within = 0.1,  -- quality gap for listing other fitting quantities
}

--- Fit of plain arrays: {n, distinct_x, xmin, xmax, ymedian, ok, ls={...}, ts={...}}.
function M.line(xs, ys)
  return report.printable(pp.numeric.fit(xs, ys), report.fit_text("x", "y"), "phaseprobe.fit")
end

--- Summary of a plain array of numbers: {count, min, median, mean, p90,
-- p99, max, sum} (the same C code as set:summary).
function M.summary(xs)
  return pp.numeric.summary(xs)
end

--- Effect of a fit: Theil-Sen slope times the x range, over max(|median y|, 1).
function M.effect(f)
  if not f.ok then return 0 end
  return f.ts.slope * (f.xmax - f.xmin) / math.max(math.abs(f.ymedian), 1)
end

local function opt(opts, k)
  if opts and opts[k] ~= nil then return opts[k] end
  return M.defaults[k]
end

local function pct(x) return report.pct(x, 0) end
local num = report.num

-- A quantity's value as its lines print it (text: the exact digits of a
-- u64 past 2^63-1, which is a float in Lua), grouped unless report.raw.
local function value_text(text, v)
  if not text then return num(v) end
  if report.raw or not text:match("^%-?%d+$") then return text end
  return report.group(text)
end

--- Whether quantity q has the support to decide a verdict: at least
-- min_distinct values each held by min_share of the records or by
-- min_records of them; or, for a quantity spread over many values (64 or
-- more), its records not piled on one value (neither the lowest 90 % nor
-- the highest half on a single value). Returns {ok=, why=, distinct=}.
function M.support(set, q, opts)
  local need = opt(opts, "min_distinct")
  local n = set:count()
  local distinct = set:distinct(q, 64)
  if distinct >= 64 then
    local s = set:summary(q)
    if s.count > 0 and (s.min == s.p90 or s.median == s.max) then
      local raw = s._raw or {} -- (exact digits: a u64 past 2^63-1 is a float)
      return { ok = false, distinct = distinct, why = string.format(
        "most records on one value (%s)", s.min == s.p90 and value_text(raw.min, s.min)
          or value_text(raw.max, s.max)) }
    end
    return { ok = true, distinct = distinct }
  end
  local threshold = math.min(opt(opts, "min_share") * n, opt(opts, "min_records"))
  local held, parts = 0, {}
  for _, g in ipairs(set:group(q)) do
    if not g.missing then
      if g.n >= threshold then held = held + 1 end
      if #parts < 6 then -- the value as its lines print it (a float may stand for a u64)
        local v = math.type(g.key) == "float" and value_text(g.set[1]:_text(q), g.key)
          or num(g.key)
        parts[#parts + 1] = string.format("%s on %s", v, num(g.n))
      end
    end
  end
  if held >= need then return { ok = true, distinct = distinct } end
  return { ok = false, distinct = distinct, need = need, why = string.format(
    "%s of %s held: %s%s", num(held), report.count(distinct, "value"), table.concat(parts, ", "),
    distinct > #parts and ", ..." or "") }
end

--- The scaling verdict of field y against the quantities (fits: the fits
-- of y against them when already made, e.g. by set:fits). Returns
-- {name=, n=, median=, verdict=, reason=, quantity=, fixed_ns=,
--  ns_per_unit=, quality=, r2=, ls_slope=, effect=, also={...},
--  fits={[q]=fit}, notes={...}}.
function M.verdict(set, y, quantities, opts, fits)
  local all = {}
  for _, q in ipairs(quantities) do all[q] = fits and fits[q] or set:fit(q, y) end
  return M.decide(y, set:summary(y), all, quantities, opts)
end

--- The verdict from the pieces verdict() takes from a set: the summary of
-- y and its fit against each quantity ({[q] = fit}), for values that are
-- not a field of a set (a difference of two fields, say).
function M.decide(y, s, fits, quantities, opts)
  -- (_raw: the summary's exact digits, for --raw: a u64 past 2^53 is a float)
  local res = report.printable({ name = y, n = s.count, median = s.median, fits = {}, also = {},
    notes = {}, _raw = s._raw and { median = s._raw.median } }, report.verdict_text,
    "phaseprobe.verdict")
  local function inconclusive(reason)
    res.verdict, res.reason = "inconclusive", reason
    return res
  end
  if s.count == 0 then return inconclusive("no values") end
  if s.count < opt(opts, "min_n") then
    return inconclusive(string.format("too few records (%s, need %s)", num(s.count),
      num(opt(opts, "min_n"))))
  end
  if s.max == 0 then return inconclusive("always 0 (never charged?)") end
  local candidates, testable, small, poor, untestable = {}, 0, 0, {}, {}
  local largest, most
  local support = opts and opts.support or {}
  for _, q in ipairs(quantities) do
    local f = fits[q]
    res.fits[q] = f
    if f.distinct_x < opt(opts, "min_distinct") or (support[q] and not support[q].ok) then
      untestable[#untestable + 1] = q
      if not most or f.distinct_x > most.d then most = { q = q, d = f.distinct_x } end
    else
      testable = testable + 1
      local e = M.effect(f)
      f.effect = e
      if not largest or math.abs(e) > math.abs(largest.effect) then
        largest = { q = q, effect = e }
      end
      if e >= opt(opts, "min_effect") and f.ts.quality >= opt(opts, "min_quality") then
        candidates[#candidates + 1] = q
      elseif math.abs(e) < opt(opts, "min_effect") then
        small = small + 1
      else
        poor[#poor + 1] = q
      end
    end
  end
  if #candidates > 0 then
    local order = {}
    for i, q in ipairs(quantities) do order[q] = i end
    table.sort(candidates, function(a, b)
      local fa, fb = res.fits[a], res.fits[b]
      if fa.ts.quality ~= fb.ts.quality then return fa.ts.quality > fb.ts.quality end
      if fa.effect ~= fb.effect then return fa.effect > fb.effect end
      return order[a] < order[b]
    end)
    local q = candidates[1]
    local f = res.fits[q]
    res.verdict = "scales with " .. q
    res.quantity = q
    res.fixed_ns = f.ts.intercept
    res.ns_per_unit = f.ts.slope
    res.quality = f.ts.quality
    res.r2 = f.ls.r2
    res.ls_slope = f.ls.slope
    res.effect = f.effect
    for i = 2, #candidates do
      local g = res.fits[candidates[i]]
      if g.ts.quality >= f.ts.quality - opt(opts, "also_within") then
        res.also[#res.also + 1] = candidates[i]
      end
    end
    if math.abs(f.ls.slope - f.ts.slope) > opt(opts, "agree") * math.abs(f.ts.slope) then
      res.notes[#res.notes + 1] = string.format(
        "least squares gives %s per unit, Theil-Sen %s: outliers?", report.ns(f.ls.slope),
        report.ns(f.ts.slope))
    end
    res.reason = string.format("%s per unit of %s: %s of the median across its range",
      report.ns(f.ts.slope), q, pct(f.effect))
    return res
  end
  if testable == 0 then
    if #quantities == 0 then return inconclusive("no counted quantities") end
    return inconclusive(string.format(
      "no quantity has the support to decide (need %s each on %s of the records or %s; "
      .. "most values: %s with %s)", report.count(opt(opts, "min_distinct"), "value"),
      pct(opt(opts, "min_share")), report.count(opt(opts, "min_records"), "record"), most.q,
      num(most.d)))
  end
  if small == testable then
    res.verdict = "fixed per dispatch"
    res.fixed_ns = s.median
    if res._raw then res._raw.fixed = res._raw.median end
    res.ns_per_unit = 0
    res.effect = largest.effect
    res.quantity = nil
    res.reason = string.format("no quantity moves it by %s over its range (largest: %s, %s)",
      pct(opt(opts, "min_effect")), largest.q, pct(largest.effect))
    if #untestable > 0 then
      res.notes[#res.notes + 1] = string.format("untested (too little support): %s",
        table.concat(untestable, ", "))
    end
    return res
  end
  local why = {}
  for _, q in ipairs(poor) do
    local f = res.fits[q]
    if f.effect < 0 then
      why[#why + 1] = string.format("falls as %s grows (%s)", q, pct(f.effect))
    else
      why[#why + 1] = string.format("poor fit against %s (quality %.2f, effect %s)", q,
        f.ts.quality, pct(f.effect))
    end
  end
  return inconclusive(table.concat(why, "; "))
end

return M
