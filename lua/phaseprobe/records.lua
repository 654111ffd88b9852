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

-- A report for a set read from CSV or JSON lines (their readers refuse a
-- damaged row: nil, msg), shaped as the parser's and printed the same way.
local function export_report(path, format, n)
  local counts = { file = path, total = n, parsed = n, rejected = 0, other = 0 }
  local rep = { format = format, file = path, total = n, parsed = n, rejected = 0, other = 0,
    errors = {}, files = { counts } }
  return report.printable(rep, function(t)
    return string.format("\nphaseprobe.parse_report: %s (%s): %s: %s", t.file,
      t.format == "csv" and "CSV" or "JSON lines", report.count(t.total, "row"),
      report.count(t.parsed, "record"))
  end, "phaseprobe.parse_report")
end

--- Reads a file ("-" is stdin): set, report, or nil, message. A log of
-- record lines goes through the line parser; a CSV or JSON-lines export
-- (by the file's extension, else by its first lines: files.format_of)
-- through its reader (phaseprobe.output.csv, .json; opts.prefix, a
-- string, is the prefix its records print with; opts.max_bytes caps it).
function M.read(path, opts)
  if type(path) == "string" and path ~= "-" then
    local files = require "phaseprobe.output.files"
    files.check_path(path, "phaseprobe.records.read", "input", 2)
    local format = files.format_of(path)
    if format == "csv" or format == "jsonl" then
      local o = {}
      if type(opts) == "table" then
        o.prefix = type(opts.prefix) == "string" and opts.prefix or nil
        o.max_bytes = opts.max_bytes
      end
      local export = require "phaseprobe.output.export"
      local set, err = export["read_" .. format](path, o)
      if not set then return nil, err end
      return set, export_report(path, format, set:count())
    end
  end
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
local RECORDS_SHOWN = 10

function Set:records()
  local out = {}
  for i = 1, self:count() do out[i] = self:record(i) end
  return report.printable(out, function(t)
    local lines = { string.format("phaseprobe.record list: %s record%s", report.num(#t),
      #t == 1 and "" or "s") }
    for i = 1, math.min(#t, RECORDS_SHOWN) do
      local l = tostring(t[i])
      if #l > report.width - 2 then l = l:sub(1, report.width - 5) .. "..." end
      lines[#lines + 1] = "  " .. l
    end
    if #t > RECORDS_SHOWN then lines[#lines + 1] = ("  ... (%s more)"):format(report.num(#t - RECORDS_SHOWN)) end
    return table.concat(lines, "\n")
  end, "phaseprobe.record_list")
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
local function layout_text(L)
  local lines = { "phaseprobe.layout (phases found by the " .. tostring(L.rule) .. " rule)" }
  local nested = {}
  for i, n in ipairs(L.nested or {}) do
    nested[i] = L.parent and L.parent[n] and (n .. " (in " .. L.parent[n] .. ")") or n
  end
  for _, row in ipairs {
    { "phases", L.phases }, { "nested", nested }, { "counts", L.counts }, { "caches", L.caches },
    { "times", L.times }, { "quantities", L.quantities },
  } do
    local list = row[2] or {}
    local text = #list > 0 and table.concat(list, ", ") or "-"
    for i, l in ipairs(report.wrap(text, report.width - 14, "")) do
      lines[#lines + 1] = (i == 1 and string.format("  %-10s  ", row[1]) or string.rep(" ", 14)) .. l
    end
  end
  return table.concat(lines, "\n")
end

function Set:layout()
  local L = rawget(self, "_layout")
  if not L then
    local cols = self._cols
    L = report.printable(record.layout(field_list(self), function(f) return cols:kind(f) end),
      layout_text, "phaseprobe.layout")
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
      .. "(%s; fields: %s)", what, name, report.count(self:count(), "record"),
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
  return report.printable(self._cols:prefixes(self._sel), function(t)
    local parts = {}
    for i, p in ipairs(t) do parts[i] = p.prefix .. " (" .. report.num(p.n) .. ")" end
    return table.concat(report.wrap(string.format("phaseprobe.prefixes (%s): %s", report.num(#t),
      table.concat(parts, ", ")), report.width, ""), "\n")
  end, "phaseprobe.prefixes")
end

--- Bytes the underlying store holds.
function Set:bytes()
  return self._cols:bytes()
end

-- ---- filtering, views, groups -----------------------------------------------

local function derive(self, sel)
  return wrap(self._cols, sel, self._view)
end

-- The comparisons a condition "F op V" may use, longest first.
local OPS = { "!=", "<=", ">=", "=", "<", ">" }

--- A condition as the command line writes it, "F=V", "F!=V", "F<N",
-- "F<=N", "F>N" or "F>=N" (F a field or tag, or @file/@line): name, op,
-- text; or nil when spec is no such condition.
function M.condition(spec)
  if type(spec) ~= "string" then return nil end
  local k, rest = spec:match("^%s*([%w_@]+)%s*(.*)$")
  if not k then return nil end
  for _, op in ipairs(OPS) do
    if rest:sub(1, #op) == op then
      local v = rest:sub(#op + 1):match("^%s*(.-)%s*$")
      if v == "" then return nil end
      return k, op, v
    end
  end
  return nil
end

-- A field no record of the store has: an error naming it and listing the
-- set's fields (level: the caller of the method).
local function unknown_field(self, name, what, level)
  if name == "@file" or name == "@line" or self:has(name) or self._cols:kind(name) then return end
  local fs = self:fields()
  error(string.format("phaseprobe.records:%s: no field '%s' in this record set "
    .. "(fields: %s)", what, name, #fs > 0 and table.concat(fs, ", ") or "none"), level + 1)
end

--- Records whose fields equal the given values: set:where{shape="cjk", knob="none"}
-- or set:where("shape", "cjk"); a value of false selects records that lack
-- the field; a list of values selects any of them. Also a condition as
-- the command line's --where writes it: set:where("knob=base"),
-- set:where("n>9000"), set:where("shape!=cjk"): numbers compare exactly
-- (each value by its own text, a u64 included), = also matches a value
-- whose text is V, and != keeps the records lacking the field. A field no
-- record has is an error.
function Set:where(spec, value)
  if type(spec) == "string" and value == nil then
    local k, op, v = M.condition(spec)
    if not k then
      error(string.format("phaseprobe.records:where: '%s' is no condition: give F=V, F!=V, "
        .. "F<N, F<=N, F>N or F>=N", spec), 2)
    end
    unknown_field(self, k, "where", 2)
    local ok, sel = pcall(self._cols.compare, self._cols, k, op, v, self._sel)
    if not ok then
      if not tostring(sel):find("compares numbers", 1, true) then error(sel, 0) end
      error(string.format("phaseprobe.records:where: %s: %s compares numbers; '%s' is not one",
        spec, op, v), 2)
    end
    return derive(self, sel)
  end
  if type(spec) == "string" then
    spec = { [spec] = value }
  end
  if type(spec) ~= "table" then
    error("phaseprobe.records:where: give {field = value, ...}, (field, value) or a "
      .. "condition such as \"knob=base\" or \"nodes>100\"", 2)
  end
  local sel = self._sel
  local keys = {}
  for k in pairs(spec) do
    if type(k) ~= "string" then
      error(string.format("phaseprobe.records:where: a field name is a string, got %s", type(k)), 2)
    end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for _, k in ipairs(keys) do unknown_field(self, k, "where", 2) end
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

--- The records of `set` whose field equals v: with v a string, as the
-- condition "field=v" compares (exactly: a number by its digits, a u64
-- past 2^63-1 included, or a value whose text is v); else set:where(field, v).
function M.equal(set, field, v)
  if type(v) == "string" then
    if v == "" or v:find("[%s=]") then return set:where { [field] = v } end
    return set:where(field .. "=" .. v)
  end
  return set:where(field, v)
end

--- One set of the records of sets over the same store, each record once,
-- in the store's order.
function M.union(sets)
  local first = sets[1]
  if not first then error("phaseprobe.records.union: no sets", 2) end
  local rows, seen = {}, {}
  for i, s in ipairs(sets) do
    if not M.is_set(s) or s._cols ~= first._cols then
      error("phaseprobe.records.union: element " .. i .. " is no set over the first one's store", 2)
    end
    for j = 1, s:count() do
      local r = s:row(j)
      if not seen[r] then
        seen[r] = true
        rows[#rows + 1] = r
      end
    end
  end
  table.sort(rows)
  return derive(first, first._cols:select(rows))
end

--- Records whose numeric field lies in [lo, hi] (either bound may be nil),
-- compared exactly: an integer bound with a u64 or a float value.
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
    out[i] = report.printable({ key = g.key, missing = g.missing, n = g.n, set = derive(self, g.sel) },
      function(e)
        return string.format("phaseprobe.group %s=%s: %s record%s (its set: .set)", name,
          e.missing and "(none)" or tostring(e.key), report.num(e.n), e.n == 1 and "" or "s")
      end, "phaseprobe.group")
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

local function key_text(g)
  if g.missing then return "(none)" end
  return tostring(g.key)
end

local function summary_fmt(field)
  local f = field:match("_ns$") and report.ns or report.num
  return function(v) return f(v) end
end

--- Per-group summaries of one field: { {key=, n=, summary=}, ... } (prints
-- as a table, a row per group).
function Groups:summary(field)
  local out = {}
  for i, g in ipairs(self) do
    out[i] = { key = g.key, missing = g.missing, n = g.n, summary = g.set:summary(field) }
  end
  local by = self.field or "key"
  return report.printable(out, function(t)
    local items = {}
    for i, g in ipairs(t) do items[i] = { name = key_text(g), summary = g.summary } end
    return string.format("phaseprobe.summaries of %s by %s: %s\n", field, by,
      report.count(#t, "group"))
      .. report.summaries(items, { fmt = summary_fmt(field), title = by })
  end, "phaseprobe.group_summaries")
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
  return string.format("phaseprobe.groups by %s: %s\n", self.field or "?",
    report.count(#self, "group"))
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
local VALUES_SHOWN = 20

function Set:values(name, as)
  check_field(self, name, "values")
  local list = self._cols:values(name, self._sel, as)
  return report.printable(list, function(t)
    local shown = {}
    for i = 1, math.min(#t, VALUES_SHOWN) do
      local v = t[i]
      shown[i] = type(v) == "string" and string.format("%q", v) or tostring(v)
    end
    local text = string.format("phaseprobe.values of %s (%s): %s%s", name, report.num(#t),
      table.concat(shown, ", "), #t > VALUES_SHOWN and (", ... (%s more)"):format(
        report.num(#t - VALUES_SHOWN)) or "")
    return table.concat(report.wrap(text, report.width - 2, ""), "\n  ")
  end, "phaseprobe.values")
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
-- A table of fits: { {y=, x=, fit=}, ... } as rows (the point count in a
-- column when the fits differ in it; else said once, in the first line).
local function fits_table(rows)
  local function eq(r, which)
    local f = r.fit
    if not (f.ok and f[which]) then return "-" end
    local a, b = f[which].intercept, f[which].slope
    if r.y:match("_ns$") then return report.equation(a, b, r.x) end
    return string.format("%s %s %s %s", report.num(a), b < 0 and "-" or "+", report.num(math.abs(b)), r.x)
  end
  local n
  for _, r in ipairs(rows) do
    if n == nil then n = r.fit.n elseif r.fit.n ~= n then n = false end
  end
  local cols = { { key = "y", title = "y" }, { key = "x", title = "x" } }
  if not n then cols[#cols + 1] = { key = function(r) return r.fit.n end, title = "points" } end
  for _, c in ipairs {
    { key = function(r) return eq(r, "ls") end, title = "least squares" },
    { key = function(r) return r.fit.ok and r.fit.ls and r.fit.ls.r2 end, title = "R2", fmt = function(v)
      return v and report.q(v) or "-" end },
    { key = function(r) return eq(r, "ts") end, title = "Theil-Sen" },
    { key = function(r) return r.fit.ok and r.fit.ts and r.fit.ts.quality end, title = "quality",
      fmt = function(v) return v and report.q(v) or "-" end },
  } do cols[#cols + 1] = c end
  return (n and (report.count(n, "point") .. " each\n") or "") .. report.table(rows, cols)
end

--- Fits of every y field against every x field, reading each column once:
-- {[y] = {[x] = fit}} (each level prints as a table).
function Set:fits(xs, ys)
  for _, f in ipairs(xs) do check_field(self, f, "fits") end
  for _, f in ipairs(ys) do check_field(self, f, "fits") end
  local all = self._cols:fits(xs, ys, self._sel)
  for _, y in ipairs(ys) do
    local per = all[y]
    if type(per) == "table" then
      for _, x in ipairs(xs) do
        if type(per[x]) == "table" then report.printable(per[x], report.fit_text(x, y), "phaseprobe.fit") end
      end
      report.printable(per, function(t)
        local rows = {}
        for _, x in ipairs(xs) do if t[x] then rows[#rows + 1] = { y = y, x = x, fit = t[x] } end end
        return "phaseprobe.fits of " .. y .. "\n" .. fits_table(rows)
      end, "phaseprobe.fits")
    end
  end
  return report.printable(all, function(t)
    local rows = {}
    for _, y in ipairs(ys) do
      for _, x in ipairs(xs) do
        if t[y] and t[y][x] then rows[#rows + 1] = { y = y, x = x, fit = t[y][x] } end
      end
    end
    return string.format("phaseprobe.fits: %s against %s\n", report.count(#ys, "field"),
      report.count(#xs, "quantity", "quantities")) .. fits_table(rows)
  end, "phaseprobe.fits")
end

--- Summary of a per-record linear combination: terms = { {"device_window_ns", 1},
-- {"kernel_ns", -1} }; records lacking a term are left out; with floor, sums
-- below it count as floor.
function Set:lincomb(terms, floor)
  local s = self._cols:lincomb(terms, self._sel, floor)
  -- its name, as a person writes the combination: a - b, 2 c
  local parts, ns = {}, true
  for i, t in ipairs(terms) do
    local f, c = tostring(t[1]), t[2]
    if not f:match("_ns$") then ns = false end
    local sign = c < 0 and (i > 1 and " - " or "-") or (i > 1 and " + " or "")
    parts[i] = sign .. (math.abs(c) ~= 1 and (report.num(math.abs(c)) .. " ") or "") .. f
  end
  local name = table.concat(parts)
  if floor then name = string.format("%s (at least %s)", name, ns and report.ns(floor) or report.num(floor)) end
  local fmt = ns and report.ns or report.num
  return report.printable(s, function(t)
    return "phaseprobe.summary of " .. name .. "\n"
      .. report.summaries({ { name = "combination", summary = t } }, { fmt = function(v) return fmt(v) end })
  end, "phaseprobe.summary")
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
    text = text .. string.format("\n(%s of %s)", report.num(limit),
      report.count(self:count(), "record"))
  end
  return text
end

SetMT.__tostring = function(self)
  local n = self:count()
  local pre = {}
  for _, p in ipairs(self:prefixes()) do pre[#pre + 1] = p.prefix .. ": " .. report.num(p.n) end
  local fields = self:fields()
  local head = string.format("phaseprobe.records: %s, %s (%s)", report.count(n, "record"),
    report.count(#fields, "field"),
    #pre > 0 and table.concat(pre, ", ") or "no prefix")
  if n == 0 then return head end
  local items, strings = {}, {}
  for _, f in ipairs(fields) do
    local k = self._cols:kind(f)
    if k == "integer" or k == "number" then
      items[#items + 1] = { name = f, summary = self._cols:summary(f, self._sel),
                            _ns = f:match("_ns$") ~= nil }
    elseif k == "string" then
      -- (distinct counts up to 1,000)
      local d = self._cols:distinct(f, self._sel, 1001)
      strings[#strings + 1] = string.format("%s (%s distinct)", f,
        d > 1000 and "over 1,000" or report.num(d))
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
