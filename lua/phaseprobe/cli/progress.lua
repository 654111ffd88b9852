--- phaseprobe.cli.progress: the progress line of a long step of a command
-- (reading a log, fitting, writing a trace or a page), on standard error.
--
--   local p = progress.new(ctx, "reading run.log", { total = bytes, unit = "B" })
--   p:update(done [, records])   -- cheap: looks at the clock every 4096 calls
--   p:done()                     -- clears the line
--
-- The line shows only when standard error is a terminal (never in a file
-- or a pipe: a log of a command's output holds no carriage returns), and
-- only once a step has taken a second; then it is redrawn at most five
-- times a second with what is done, the rate and, when the total is known,
-- an estimate of the time left. PHASEPROBE_PROGRESS=1 shows it whatever
-- standard error is, =0 never.
local M = {}

local function now_s()
  local ok, pp = pcall(require, "phaseprobe")
  if ok and type(pp) == "table" and pp.now then return pp.now() / 1e9 end
  return os.clock()
end

--- Whether progress lines go to `err` (the ctx's error stream).
function M.enabled(err)
  local env = os.getenv("PHASEPROBE_PROGRESS")
  if env == "1" then return true end
  if env == "0" then return false end
  if err ~= io.stderr then return false end
  local ok, pp = pcall(require, "phaseprobe")
  if not (ok and type(pp) == "table" and type(pp.isatty) == "function") then return false end
  local tty_ok, tty = pcall(pp.isatty, 2)
  return tty_ok and tty == true
end

local SI = { { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } }

-- 3 significant digits with an SI prefix: 1.23 M, 456 k, 12.
local function si(v)
  for _, p in ipairs(SI) do
    if v >= p[1] then
      local x = v / p[1]
      return (x >= 100 and "%.0f %s" or x >= 10 and "%.1f %s" or "%.2f %s"):format(x, p[2])
    end
  end
  return ("%.0f "):format(v)
end

local function duration(s)
  if s >= 3600 then return ("%d h %02d min"):format(s // 3600, (s % 3600) // 60) end
  if s >= 60 then return ("%d min %02d s"):format(s // 60, math.floor(s % 60)) end
  return ("%.0f s"):format(math.max(s, 1))
end

local Progress = {}
Progress.__index = Progress

--- A progress line for one step. what: the step ("reading run.log");
-- opts.total: the amount when known; opts.unit: "B" for bytes, else a
-- word ("records"); opts.second: a word for update's second count.
function M.new(ctx, what, opts)
  opts = opts or {}
  local p = setmetatable({ err = ctx.err, name = ctx.name, what = what, total = opts.total,
    unit = opts.unit or "", second = opts.second, on = M.enabled(ctx.err), t0 = now_s(),
    calls = 0, shown = false, last = 0 }, Progress)
  return p
end

function Progress:draw(done, extra)
  local t = now_s()
  local el = t - self.t0
  if el < 1 or t - self.last < 0.2 then return end
  self.last = t
  local rate = done / el
  local unit = self.unit == "B" and "B" or (" " .. self.unit)
  local parts = { ("%s: %s: %s%s"):format(self.name, self.what, si(done), unit) }
  if self.total and self.total > 0 then
    parts[#parts + 1] = (" of %s%s (%d%%)"):format(si(self.total), unit,
      math.floor(100 * math.min(done / self.total, 1)))
  end
  if extra and self.second then parts[#parts + 1] = (", %s%s"):format(si(extra), self.second) end
  parts[#parts + 1] = (", %s%s/s"):format(si(rate), self.unit == "B" and "B" or "")
  if self.total and rate > 0 and done < self.total then
    parts[#parts + 1] = (", about %s left"):format(duration((self.total - done) / rate))
  end
  local line = table.concat(parts)
  self.err:write("\r", line, "\27[K")
  self.shown = true
end

--- Says `done` (and `extra`, e.g. records while reading bytes) is reached.
-- Looks at the clock on every call when `every` is 1, else every 4096th.
function Progress:update(done, extra)
  if not self.on then return end
  self.calls = self.calls + 1
  if self.calls % 4096 ~= 0 and not self.every_call then return end
  self:draw(done, extra)
end

--- The step is over: the line is cleared.
function Progress:done()
  if self.on and self.shown then self.err:write("\r\27[K") end
  self.shown = false
end

--- A progress object whose update looks at the clock on every call (for
-- steps that report rarely, such as a reader's callback per chunk).
function M.coarse(ctx, what, opts)
  local p = M.new(ctx, what, opts)
  p.every_call = true
  return p
end

return M
