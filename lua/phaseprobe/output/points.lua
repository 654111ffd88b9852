-- phaseprobe.output.points: the points of one scatter plot (a phase's time
-- against a quantity), from record sets of any size, for output/svg.lua.
--
--   local p = points.gather(groups, quantity, label [, opts])
--   -- groups = { {name=, set=}, ... } (record sets); opts.max_points
--   -- p = { n = points, binned = bool, x = {max=}, y = {max=, bulk=},
--   --       series = { {name=, points = { {x, y, n}, ... }, outliers = { {x, y, seq} } } },
--   --       (seq: the record's, a string of digits past 2^63-1)
--   --       outliers = count, outliers_drawn = count }
--
-- Sits between the record sets and the SVG scatter: every record that has
-- both fields is looked at once. Past opts.max_points (default
-- M.MAX_POINTS) points, those of the bulk go through a grid of
-- M.GRID_X x M.GRID_Y cells per series and each occupied cell gives one
-- point at the mean position of its records, with their count (n), so the
-- picture keeps every cluster and its weight. The bulk is the values up to
-- y.bulk: the 99th percentile with a fifth of headroom, rounded up to the
-- axis tick above it, when the largest value lies more than twice as high;
-- else the largest value.
-- Points above the bulk are outliers: kept one by one (the largest
-- M.MAX_OUTLIERS per plot; the rest binned in the band above the break),
-- so a few 10 ms dispatches neither vanish nor squash the rest.
local M = {}

M.MAX_POINTS = 2000
M.GRID_X, M.GRID_Y = 160, 100
M.MAX_OUTLIERS = 200

-- Values of x and y over the records of `set` that have both: two aligned
-- lists, and the seq of each (when the set has one).
local function columns(set, quantity, label)
  local both = set:range(quantity):range(label)
  return both:values(quantity), both:values(label), both:has("seq") and both:values("seq") or nil,
    both
end

function M.gather(groups, quantity, label, opts)
  opts = opts or {}
  local max_points = opts.max_points or M.MAX_POINTS
  local cols, n, xmax, ymax = {}, 0, 0, 0
  for gi, g in ipairs(groups) do
    local xs, ys, seqs, both = {}, {}, nil, nil
    if g.set:has(quantity) and g.set:has(label) then
      xs, ys, seqs, both = columns(g.set, quantity, label)
    end
    if seqs and #seqs ~= #xs then seqs = nil end
    cols[gi] = { xs = xs, ys = ys, seqs = seqs, both = both }
    n = n + #xs
    for i = 1, #xs do
      local x, y = xs[i], ys[i]
      if x > xmax then xmax = x end
      if y > ymax then ymax = y end
    end
  end
  -- the bulk: the 99th percentile over every group (the C summary)
  local bulk = ymax
  if n >= 100 then
    local p99 = 0
    for _, g in ipairs(groups) do
      if g.set:has(label) then
        local s = g.set:summary(label)
        if s.count > 0 and s.p99 > p99 then p99 = s.p99 end
      end
    end
    if p99 > 0 and ymax > 2 * (1.2 * p99) then
      -- the axis of the bulk ends at a round tick at or above 1.2 x p99
      local svg = require "phaseprobe.output.svg"
      local u = svg.unit_for(opts.unit or "ns", 1.2 * p99)
      local ticks = svg.ticks(0, 1.2 * p99 / u.scale, 5)
      bulk = ticks[#ticks] * u.scale
      if bulk >= ymax then bulk = ymax end
    end
  end
  local binned = n > max_points
  local out = { n = n, binned = binned, x = { max = xmax }, y = { max = ymax, bulk = bulk },
    series = {}, outliers = 0, outliers_drawn = 0 }
  local gx, gy = M.GRID_X, M.GRID_Y
  local xspan = xmax > 0 and xmax or 1
  local yspan = bulk > 0 and bulk or 1
  local all_out = {}
  for gi, g in ipairs(groups) do
    local c = cols[gi]
    local pts, outl = {}, {}
    local cells, order = {}, {}
    local xs, ys, seqs = c.xs, c.ys, c.seqs
    for i = 1, #xs do
      local x, y = xs[i], ys[i]
      if y > bulk then
        -- (a seq past 2^63-1 is a float in Lua: its digits from the record)
        local seq = seqs and seqs[i] or nil
        if math.type(seq) == "float" then seq = c.both:record(i):_text("seq") end
        outl[#outl + 1] = { x, y, seq }
      elseif not binned then
        pts[#pts + 1] = { x, y, 1 }
      else
        local key = math.floor(x / xspan * (gx - 1) + 0.5) * gy + math.floor(y / yspan * (gy - 1) + 0.5)
        local cell = cells[key]
        if cell then
          cell[1], cell[2], cell[3] = cell[1] + x, cell[2] + y, cell[3] + 1
        else
          cells[key] = { x, y, 1 }
          order[#order + 1] = key
        end
      end
    end
    for _, key in ipairs(order) do
      local cell = cells[key]
      pts[#pts + 1] = { cell[1] / cell[3], cell[2] / cell[3], cell[3] }
    end
    out.series[gi] = { name = g.name, points = pts, outliers = outl }
    for _, o in ipairs(outl) do all_out[#all_out + 1] = o end
    out.outliers = out.outliers + #outl
  end
  -- past the cap, the largest outliers stay one by one; the others are
  -- drawn as the band's binned points
  if #all_out > M.MAX_OUTLIERS then
    table.sort(all_out, function(a, b) return a[2] > b[2] end)
    local keep = all_out[M.MAX_OUTLIERS][2]
    for _, s in ipairs(out.series) do
      local kept, rest = {}, {}
      for _, o in ipairs(s.outliers) do
        if o[2] >= keep and #kept < M.MAX_OUTLIERS then kept[#kept + 1] = o else rest[#rest + 1] = o end
      end
      s.outliers = kept
      local cells, order = {}, {}
      for _, o in ipairs(rest) do
        local key = math.floor(o[1] / xspan * (gx - 1) + 0.5) * gy
          + math.floor((o[2] - bulk) / math.max(ymax - bulk, 1) * 9 + 0.5)
        local cell = cells[key]
        if cell then
          cell[1], cell[2], cell[3] = cell[1] + o[1], cell[2] + o[2], cell[3] + 1
        else
          cells[key] = { o[1], o[2], 1 }
          order[#order + 1] = key
        end
      end
      for _, key in ipairs(order) do
        local cell = cells[key]
        s.points[#s.points + 1] = { cell[1] / cell[3], cell[2] / cell[3], cell[3] }
      end
    end
  end
  for _, s in ipairs(out.series) do out.outliers_drawn = out.outliers_drawn + #s.outliers end
  return out
end

return M
