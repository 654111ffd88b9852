--- phaseprobe.cli.progress: the progress line of a long step of a command
-- (reading a log, analysing it, writing a trace, an export or a page), on standard error.
--
--   local p = progress.new(ctx, "reading run.log", { total = bytes, unit = "B" })
--   p:update(done [, extra [, label]])   -- cheap: looks at the clock rarely
--   p:done()                             -- clears the line
--   p:active()                           -- whether the line is shown at all
--
-- The line shows only when standard error is a terminal (never in a file
-- or a pipe: a log of a command's output holds no carriage returns), and
-- only once the step, or the command it belongs to, has run a second (a
-- person is then watching: a later step shows from its first update).
-- It is redrawn at most five times a second with what is done, the rate
-- and, when the total is known, the share and an estimate of the time
-- left, within the terminal's width (COLUMNS, else 100 columns as far as
-- it goes without cutting: the item's label goes first, then the front of
-- a path). PHASEPROBE_PROGRESS=1 shows it whatever
-- standard error is, =0 never.
--
-- update may be called once per record or once per chunk: it reads the
-- clock on its first call, then after as many calls as came in about 20 ms
-- at the rate they came since the last reading (at most twice as many as
-- the time before).
local M = {}

local function now_s()
  local ok, pp = pcall(require, "phaseprobe")
  if ok and type(pp) == "table" and pp.now then return pp.now() / 1e9 end
  return os.clock()
end
M.now = now_s

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

-- 3 significant digits and an SI prefix: "1.23", "M"; "456", "k"; "5.50", "".
local function si(v)
  local x, prefix = v, ""
  for _, p in ipairs(SI) do
    if v >= p[1] then
      x, prefix = v / p[1], p[2]
      break
    end
  end
  return (x >= 100 and "%.0f" or x >= 10 and "%.1f" or "%.2f"):format(x), prefix
end

-- A whole count with thousands separators: 2,048.
local function count_text(v)
  local s = ("%d"):format(math.floor(v + 0.5))
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (out:gsub("^,", ""))
end

-- A unit's word for one of it: "record", "summary" (a word that is no
-- plural is kept).
local function singular(unit)
  if unit:match("ies$") then return (unit:gsub("ies$", "y")) end
  if unit:match("[^s]s$") then return (unit:gsub("s$", "")) end
  return unit
end

--- An amount of `unit` as the line shows it: "12.3 MB", "512 B",
-- "2,048 records", "1 record", "1.20 M records", "7 plots".
function M.amount(v, unit)
  if unit == "B" then
    if v < 1000 then return count_text(v) .. " B" end
    local x, p = si(v)
    return x .. " " .. p .. "B"
  end
  local text
  if v < 10000 then
    text = count_text(v)
    if text == "1" and unit then unit = singular(unit) end
  else
    local x, p = si(v)
    text = x .. " " .. p
  end
  return unit and unit ~= "" and (text .. " " .. unit) or text
end

--- A rate of `unit` per second: "45.6 MB/s", "12.3 k records/s", "5.50 plots/s".
function M.rate(v, unit)
  local x, p = si(v)
  if unit == "B" then return x .. " " .. p .. "B/s" end
  local text = p ~= "" and (x .. " " .. p) or x
  return unit and unit ~= "" and (text .. " " .. unit .. "/s") or (text .. "/s")
end

--- A time left: "1 s", "42 s", "3 min 05 s", "1 h 02 min".
function M.duration(s)
  if s >= 3600 then return ("%d h %02d min"):format(s // 3600, (s % 3600) // 60) end
  if s >= 60 then return ("%d min %02d s"):format(s // 60, math.floor(s % 60)) end
  return ("%.0f s"):format(math.max(s, 1))
end

local Progress = {}
Progress.__index = Progress

--- A progress line for one step. what: the step ("reading run.log");
-- opts.total: the amount when known; opts.unit: "B" for bytes, else a
-- word ("records"); opts.second: a word for update's second count
-- ("records" while bytes are read).
function M.new(ctx, what, opts)
  opts = opts or {}
  local t0 = now_s()
  local second = opts.second and opts.second:match("^%s*(.-)%s*$") or nil
  return setmetatable({ err = ctx.err, name = ctx.name, what = what, total = opts.total,
    unit = opts.unit or "", second = second, on = M.enabled(ctx.err), t0 = t0,
    started = ctx.t0 or t0, calls = 0, next_look = 1, stride = 1, looked = t0, looked_calls = 0,
    shown = false, last = -math.huge }, Progress)
end

--- The line for `done` (and `extra`, `label`) at time t, elapsed el.
function Progress:line(done, extra, label, el)
  local parts = { ("%s: %s: "):format(self.name, self.what) }
  if label then parts[#parts + 1] = label .. ", " end
  parts[#parts + 1] = M.amount(done, self.unit)
  if self.total and self.total > 0 then
    parts[#parts + 1] = (" of %s (%d%%)"):format(self.unit == "B" and M.amount(self.total, "B")
      or M.amount(self.total, nil), math.floor(100 * math.min(done / self.total, 1)))
  end
  if extra and self.second then parts[#parts + 1] = ", " .. M.amount(extra, self.second) end
  local rate = el > 0 and done / el or 0
  if rate > 0 then parts[#parts + 1] = ", " .. M.rate(rate, self.unit) end
  if self.total and rate > 0 and done < self.total then
    parts[#parts + 1] = (", about %s left"):format(M.duration((self.total - done) / rate))
  end
  return table.concat(parts)
end

--- The columns a line may take: one less than the terminal's width when
-- COLUMNS says it (so that the cursor stays on the line "\r" returns to),
-- and true; else 100, the width of everything the commands print, and
-- false (the terminal may be wider: the line is then only shortened, not
-- cut).
function M.width()
  local cols = math.tointeger(tonumber(os.getenv("COLUMNS") or ""))
  if cols and cols >= 20 then return cols - 1, true end
  return 100, false
end

local function len(s) return utf8.len(s) or #s end

-- The line within w columns: without the item's label if need be, then
-- with a path the step names shortened from its front ("reading
-- …/logs/run.log": a file's name is its end), so that the figures, rate and
-- estimate stay; cut only when the width is known (cut).
local function fitted(self, done, extra, label, el, w, cut)
  local text = self:line(done, extra, label, el)
  if label and len(text) > w then text = self:line(done, extra, nil, el) end
  local over = len(text) - w
  local verb, object = self.what:match("^(%S+ )(%S*/%S*)$")
  if over > 0 and object and len(object) > 1 then
    local what = self.what
    local from = math.min(over + 2, len(object))
    self.what = verb .. "…" .. object:sub(utf8.offset(object, from))
    text = self:line(done, extra, nil, el)
    self.what = what
  end
  if cut and len(text) > w then text = text:sub(1, utf8.offset(text, w + 1) - 1) end
  return text
end

function Progress:draw(done, extra, label, t)
  t = t or now_s()
  if t - self.t0 < 1 and t - self.started < 1 then return end
  if t - self.last < 0.2 then return end
  -- a line without a rate yet (nothing done) is soon followed by one with it
  if done > 0 then self.last = t end
  local w, known = M.width()
  self.err:write("\r", fitted(self, done, extra, label, t - self.t0, w, known), "\27[K")
  self.shown = true
end

--- Says `done` (and `extra`, e.g. records while reading bytes; `label`,
-- the item now under way) is reached.
function Progress:update(done, extra, label)
  if not self.on then return end
  local calls = self.calls + 1
  self.calls = calls
  if calls < self.next_look then return end
  local t = now_s()
  -- the next look about 20 ms on, at the rate the calls came since the last
  -- (at most twice the last stride: one quick pair of calls says little)
  local per_call = (t - self.looked) / (calls - self.looked_calls)
  local stride = 2 * self.stride
  if per_call > 0 then stride = math.min(stride, math.floor(0.02 / per_call)) end
  self.stride = math.max(1, math.min(stride, 1 << 20))
  self.looked, self.looked_calls = t, calls
  self.next_look = calls + self.stride
  self:draw(done, extra, label, t)
end

--- Whether the line is shown (standard error is a terminal): work may
-- then be cut in pieces so that the line moves.
function Progress:active()
  return self.on
end

--- The step is over: the line is cleared.
function Progress:done()
  if self.on and self.shown then self.err:write("\r\27[K") end
  self.shown = false
end

--- The same as new (kept for callers that asked for a clock look on
-- every call: update adapts by itself).
function M.coarse(ctx, what, opts)
  return M.new(ctx, what, opts)
end

return M
