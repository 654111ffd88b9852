--- phaseprobe.records: record sets. A set is a column store (from the C
-- parser: files, strings, line iterators, the live store) plus an optional
-- selection of its records and an optional column view. Sets are cheap:
-- filtering and grouping make new selections over the same store.
--
--   local records = require "phaseprobe.records"     -- or pp.records
--   local set, report = records.read("run.log")
--   print(set)                                       -- summary table
--   local cjk = set:where{ shape = "cjk" }
--   for _, g in ipairs(set:group("shape")) do print(g.key, g.set:summary("wall_ns").median) end
--   print(set[1])                                    -- the first record, as its line
--
-- Field names are the line's names ("ptx_ns", "nodes", tags such as
-- "shape"); "@file" and "@line" name each record's source and line.
--
-- Where it sits: the one record container. Logs (the C parser), the live
-- store, lists of records (pp.parse.list) and CSV / JSON lines read back all
-- become sets; analysis/, output/, the demo and the commands take sets.
-- Their records are phaseprobe.record objects; set:layout() says which
-- fields are phases (phaseprobe.record's rule).
local pp = require "phaseprobe"
local record = require "phaseprobe.record"
local report = require "phaseprobe.output.report"

local M = {}

local Set = {}
local SetMT = { __name = "phaseprobe.records" }
local Groups = {}
local GroupsMT = { __name = "phaseprobe.groups", __index = Groups }

local function wrap(cols, sel, view)
  return setmetatable({ _cols = cols, _sel = sel, _view = view }, SetMT)
end

SetMT.__index = function(t, k)
  if math.type(k) == "integer" then return t:record(k) end
  return Set[k]
end

SetMT.__len = function(t) return t:count() end

--- Whether x is a record set.
function M.is_set(x)
  return getmetatable(x) == SetMT
end

--- A set over a column store (from pp.parse) and an optional selection.
function M.wrap(cols, sel)
  return wrap(cols, sel, nil)
end

-- ---- constructors -----------------------------------------------------------

--- Reads a log file ("-" is stdin): set, report, or nil, message.
function M.read(path, opts)
  local cols, rep = pp.parse.file(path, opts)
  if not cols then return nil, rep end
  return wrap(cols), rep
end

--- Reads several files into one set ("@file" tells them apart): set,
-- report, or nil, message for the first file that cannot be read.
function M.read_many(paths, opts)
  local p <close> = pp.parse.new(opts)
  for _, path in ipairs(paths) do
    local ok, err = p:file(path, opts and opts.progress)
    if not ok then return nil, err end
  end
  local cols, rep = p:finish()
  return wrap(cols), rep
end

--- Parses a string of lines.
function M.from_string(s, opts)
  local cols, rep = pp.parse.string(s, opts)
  return wrap(cols), rep
end

--- Parses lines from an iterator (io.lines(path), string.gmatch, ...).
function M.from_lines(iter, opts)
  local cols, rep = pp.parse.lines(iter, opts)
  return wrap(cols), rep
end

--- The live store's records (pp.store) as a set.
-- (the set alone: the store holds no damaged lines to report)
function M.from_store(opts)
  local cols = pp.parse.store(opts)
  return wrap(cols)
end

--- A set from a list of records: records from pp.emit, pp.store.records()
-- or other sets (copied with their prefix, fields and values), or plain
-- tables of name = value (prefix opts.prefix, default "record"; fields in
-- the order of opts.fields, then the others by name). Built in C, value by
-- value (pp.parse.list: the other options are its); raises on a value a
-- record cannot hold, naming the element and field.
function M.from_list(list, opts)
  if type(list) ~= "table" then
    error("phaseprobe.records.from_list: expected a list of records, got " .. type(list), 2)
  end
  return wrap(pp.parse.list(list, opts))
end

--- One set holding the records of several sets, in order (each keeps its
-- @file and @line).
function M.concat(sets)
  local list = {}
  for i, s in ipairs(sets) do
    if not M.is_set(s) then
      error("phaseprobe.records.concat: element " .. i .. " is not a record set", 2)
    end
    for j = 1, s:count() do list[#list + 1] = s:record(j) end
  end
  return wrap(pp.parse.list(list))
end

-- ---- basics -----------------------------------------------------------------

--- Number of records in the set.
function Set:count()
  if self._sel then return #self._sel end
  return self._cols:count()
end

--- The store row (1-based) of the set's i-th record.
function Set:row(i)
  if self._sel then return self._sel:get(i) end
  if i >= 1 and i <= self._cols:count() then return i end
  return nil
end

--- The i-th record (a phaseprobe.record: fields read on access, prints as
-- its line).
function Set:record(i)
  local r = self:row(i)
  if not r then return nil end
  return self._cols:row(r, self._view)
end

--- The i-th record's line (as read, numbers re-spelled).
function Set:line(i)
  local r = self:row(i)
  return r and self._cols:line(r)
end

--- Iterates i, record.
function Set:each()
  local i, n = 0, self:count()
  return function()
    i = i + 1
    if i <= n then return i, self:record(i) end
  end
end

--- All records as a list (for small sets).
function Set:records()
  local out = {}
  for i = 1, self:count() do out[i] = self:record(i) end
  return out
end

local function field_list(self)
  local fl = rawget(self, "_fieldlist")
  if not fl then
    fl = self._view or self._cols:order(self._sel)
    local set = {}
    for _, f in ipairs(fl) do set[f] = true end
    self._fieldlist, self._fieldset = fl, set
  end
  return fl
end

--- Field names: the view's, or those of the selected records in line order.
local fields_text = report.list_text("phaseprobe.fields")
function Set:fields()
  local out = {}
  for i, f in ipairs(field_list(self)) do out[i] = f end
  return report.printable(out, fields_text, "phaseprobe.fields")
end

--- What the set's fields mean (phases, nested regions, counts, caches,
-- times, quantities): phaseprobe.record.layout over the set's fields.
function Set:layout()
  local L = rawget(self, "_layout")
  if not L then
    local cols = self._cols
    L = record.layout(field_list(self), function(f) return cols:kind(f) end)
    self._layout = L
  end
  return L
end

--- Whether some record of the set has the field (or it is @file/@line).
function Set:has(name)
  if name == "@file" or name == "@line" then return true end
  field_list(self)
  return self._fieldset[name] == true
end

local function check_field(self, name, what)
  if type(name) ~= "string" then
    error(string.format("phaseprobe.records:%s: a field name is a string, got %s",
      what, type(name)), 3)
  end
  if self:count() > 0 and not self:has(name) then
    local fs = self:fields()
    error(string.format("phaseprobe.records:%s: no field '%s' in this record set "
      .. "(%d records; fields: %s)", what, name, self:count(),
      #fs > 0 and table.concat(fs, ", ") or "none"), 3)
  end
end

--- The selection object (nil: all records of the store).
function Set:selection()
  return self._sel
end

--- The column store underneath.
function Set:columns()
  return self._cols
end

--- Prefixes of the set's records: { {prefix=, n=}, ... }.
function Set:prefixes()
  return self._cols:prefixes(self._sel)
end

--- Bytes the underlying store holds.
function Set:bytes()
  return self._cols:bytes()
end

-- ---- filtering, views, groups -----------------------------------------------

local function derive(self, sel)
  return wrap(self._cols, sel, self._view)
end

--- Records whose fields equal the given values: set:where{shape="cjk", knob="none"}
-- or set:where("shape", "cjk"). A value of false selects records that lack
-- the field; a list of values selects any of them.
function Set:where(spec, value)
  if type(spec) == "string" then
    if value == nil then value = false end
    spec = { [spec] = value }
  end
  if type(spec) ~= "table" then
    error("phaseprobe.records:where: give {field = value, ...} or (field, value)", 2)
  end
  local sel = self._sel
  local keys = {}
  for k in pairs(spec) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = spec[k]
    if type(v) == "table" then
      local rows = {}
      for _, alt in ipairs(v) do
        if alt == false then alt = nil end
        local s = self._cols:where(k, alt, sel)
        for _, r in ipairs(s:indices()) do rows[#rows + 1] = r end
      end
      sel = self._cols:select(rows)
    else
      if v == false then v = nil end
      sel = self._cols:where(k, v, sel)
    end
  end
  return derive(self, sel)
end

--- Records whose numeric field lies in [lo, hi] (either bound may be nil).
function Set:range(name, lo, hi)
  check_field(self, name, "range")
  return derive(self, self._cols:range(name, lo, hi, self._sel))
end

--- Records for which fn(record) is true.
function Set:filter(fn)
  if type(fn) ~= "function" then
    error("phaseprobe.records:filter: give a function(record) -> boolean", 2)
  end
  local rows = {}
  for i = 1, self:count() do
    local r = self:row(i)
    if fn(self._cols:row(r)) then rows[#rows + 1] = r end
  end
  return derive(self, self._cols:select(rows))
end

--- The first n records (or fewer).
function Set:head(n)
  local rows = {}
  for i = 1, math.min(n, self:count()) do rows[i] = self:row(i) end
  return derive(self, self._cols:select(rows))
end

--- A column view: records show only these fields: set:select{"wall_ns", "ptx_ns"}
-- or set:select("wall_ns", "ptx_ns").
function Set:select(first, ...)
  local names = type(first) == "table" and first or { first, ... }
  for _, n in ipairs(names) do check_field(self, n, "select") end
  local view = {}
  for i, n in ipairs(names) do view[i] = n end
  return wrap(self._cols, self._sel, view)
end

--- Groups by a field or tag (or "@file"): a list of {key=, n=, set=} in order
-- of first appearance; records lacking the field form a group with
-- missing = true. The list prints as a per-group table.
function Set:group(name)
  check_field(self, name, "group")
  local out = { field = name }
  for i, g in ipairs(self._cols:group(name, self._sel)) do
    out[i] = { key = g.key, missing = g.missing, n = g.n, set = derive(self, g.sel) }
  end
  return setmetatable(out, GroupsMT)
end

--- The group with this key (nil if none).
function Groups:get(key)
  for _, g in ipairs(self) do
    if g.key == key then return g end
  end
  return nil
end

--- Per-group summaries of one field: { {key=, n=, summary=}, ... }.
function Groups:summary(field)
  local out = {}
  for i, g in ipairs(self) do
    out[i] = { key = g.key, missing = g.missing, n = g.n, summary = g.set:summary(field) }
  end
  return out
end

local function key_text(g)
  if g.missing then return "(none)" end
  return tostring(g.key)
end

GroupsMT.__tostring = function(self)
  local rows = {}
  local probe = self[1] and self[1].set
  local field = probe and probe:has("wall_ns") and "wall_ns" or nil
  for i, g in ipairs(self) do
    local s = field and g.set:summary(field) or {}
    rows[i] = { key = key_text(g), n = g.n, median = s.median, mean = s.mean,
                p90 = s.p90, sum = s.sum }
  end
  local cols = { { key = "key", title = self.field or "key" },
                 { key = "n", title = "records" } }
  if field then
    cols[#cols + 1] = { key = "median", title = "median wall", fmt = report.ns }
    cols[#cols + 1] = { key = "mean", title = "mean wall", fmt = report.ns }
    cols[#cols + 1] = { key = "p90", title = "p90 wall", fmt = report.ns }
    cols[#cols + 1] = { key = "sum", title = "total wall", fmt = report.ns }
  end
  return string.format("phaseprobe.groups by %s: %d groups\n", self.field or "?", #self)
    .. report.table(rows, cols)
end

-- ---- numbers -----------------------------------------------------------------

--- Summary of a numeric field: {count, min, median, mean, p90, p99, max, sum}
-- over the records that have it (count = 0 and nothing else when none).
function Set:summary(name)
  check_field(self, name, "summary")
  return report.printable(self._cols:summary(name, self._sel), report.summary_text(name),
    "phaseprobe.summary")
end

--- The field's total over the set's records divided by their count: its
-- mean per record, a record lacking the field counting as 0 (0 for an
-- empty set or a field no record has).
function Set:per_record(name)
  local n = self:count()
  if n == 0 or not self:has(name) then return 0 end
  return (self:summary(name).sum or 0) / n
end

--- Summaries of every numeric field (or of the names given): name -> summary.
function Set:summaries(names)
  local out = {}
  for _, f in ipairs(names or self:fields()) do
    local k = self._cols:kind(f)
    if k == "integer" or k == "number" then out[f] = self:summary(f) end
  end
  return report.printable(out, function(t)
    local items, names = {}, {}
    for f in pairs(t) do names[#names + 1] = f end
    table.sort(names)
    for i, f in ipairs(names) do items[i] = { name = f, summary = t[f] } end
    return "phaseprobe.summaries\n" .. report.summaries(items, { fmt = function(v, row)
      return row.name:match("_ns$") and report.ns(v) or report.num(v)
    end })
  end, "phaseprobe.summaries")
end

--- Values of a field over the set's records that have it (a Lua list),
-- as Lua values (integers, floats, strings; a u64 above 2^63-1 is the
-- nearest float: not exact), or with as = "text" as the exact texts the
-- record lines print.
function Set:values(name, as)
  check_field(self, name, "values")
  return self._cols:values(name, self._sel, as)
end

--- Distinct values of a field (counted up to limit, default 1000).
function Set:distinct(name, limit)
  return self._cols:distinct(name, self._sel, limit)
end

--- Line fit of y against x (least squares and Theil-Sen), see phaseprobe.analysis.fit.
function Set:fit(x, y)
  check_field(self, x, "fit")
  check_field(self, y, "fit")
  return report.printable(self._cols:fit(x, y, self._sel), report.fit_text(x, y), "phaseprobe.fit")
end

--- Fits of every y field against every x field, reading each column once:
-- {[y] = {[x] = fit}}.
function Set:fits(xs, ys)
  for _, f in ipairs(xs) do check_field(self, f, "fits") end
  for _, f in ipairs(ys) do check_field(self, f, "fits") end
  return self._cols:fits(xs, ys, self._sel)
end

--- Summary of a per-record linear combination: terms = { {"device_window_ns", 1},
-- {"kernel_ns", -1} }; records lacking a term are left out; with floor, sums
-- below it count as floor.
function Set:lincomb(terms, floor)
  return self._cols:lincomb(terms, self._sel, floor)
end

--- A per-dispatch table of the given fields (default: the view, or seq,
-- wall_ns and the phases), at most `limit` rows (default 20).
function Set:view(fields, limit)
  fields = fields or self._view
  if not fields then
    local info = self:layout()
    fields = {}
    for _, f in ipairs({ "seq", "wall_ns" }) do
      if self:has(f) then fields[#fields + 1] = f end
    end
    for _, p in ipairs(info.phases) do fields[#fields + 1] = p end
  end
  limit = limit or 20
  local rows = {}
  for i = 1, math.min(limit, self:count()) do
    local r = self:row(i)
    local row = {}
    for _, f in ipairs(fields) do row[f] = self._cols:get(r, f) end
    rows[i] = row
  end
  local cols = {}
  for i, f in ipairs(fields) do
    cols[i] = { key = f, title = f, fmt = f:match("_ns$") and report.ns or nil }
  end
  local text = report.table(rows, cols)
  if self:count() > limit then
    text = text .. string.format("\n(%d of %d records)", limit, self:count())
  end
  return text
end

SetMT.__tostring = function(self)
  local n = self:count()
  local pre = {}
  for _, p in ipairs(self:prefixes()) do pre[#pre + 1] = p.prefix .. ": " .. report.num(p.n) end
  local fields = self:fields()
  local head = string.format("phaseprobe.records: %s record%s, %d field%s (%s)", report.num(n),
    n == 1 and "" or "s", #fields, #fields == 1 and "" or "s",
    #pre > 0 and table.concat(pre, ", ") or "no prefix")
  if n == 0 then return head end
  local items, strings = {}, {}
  for _, f in ipairs(fields) do
    local k = self._cols:kind(f)
    if k == "integer" or k == "number" then
      items[#items + 1] = { name = f, summary = self._cols:summary(f, self._sel),
                            _ns = f:match("_ns$") ~= nil }
    elseif k == "string" then
      strings[#strings + 1] = string.format("%s (%d distinct)", f,
        self._cols:distinct(f, self._sel, 1000))
    end
  end
  local table_text = report.summaries(items, { fmt = function(v, row)
    if row.name:match("_ns$") then return report.ns(v) end
    return report.num(v)
  end })
  local text = head .. "\n" .. table_text
  if #strings > 0 then text = text .. "\ntext fields: " .. table.concat(strings, ", ") end
  return text
end

return M
