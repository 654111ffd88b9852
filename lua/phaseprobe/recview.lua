-- phaseprobe.recview: what the exports, plots and reports need to know about
-- records, whatever they came from.
--
-- A record is a table of name = value (integers; strings for kernel_src and
-- tags). Records from the probe or the parser carry a metatable answering
-- r._fields (field names in line order) and r._prefix. From _fields alone the
-- schema's parts can be told apart, because every schema prints its fields in
-- one order: seq, counts, wall/enqueue/wait/device_window/kernel, phases,
-- nested regions (sub_*), named_host_ns, unattributed_ns, caches, then ours.
local M = {}

local DEFAULT_PREFIX = "vyre-cuda-dispatch-phase"

-- The default schema's field order, from the C module when it loads (it is
-- the authority), else nil: callers then fall back to what the record holds.
local default_fields
local function defaults()
  if default_fields == nil then
    local ok, pp = pcall(require, "phaseprobe")
    if ok and type(pp) == "table" and pp.default_schema then
      local s = pp.default_schema()
      default_fields = { fields = s.fields, prefix = s.prefix }
    else
      default_fields = false
    end
  end
  return default_fields or nil
end

local function is_record_set_object(set)
  return getmetatable(set) ~= nil and rawlen(set) == 0
end

local function method(obj, name)
  local ok, f = pcall(function() return obj[name] end)
  return ok and f or nil
end

-- An array of records from a record set object or a plain array of records.
-- A set object is recognised by what yields its records, in this order:
-- count() with record(i) (phaseprobe.records sets), count() with row(i)
-- returning record tables (the parser's column store), records() returning
-- an array, or rows()/each()/iter() returning an iterator (of records, or of
-- index, record pairs) or an array.
function M.collect(set, what)
  what = what or "records"
  if type(set) == "userdata" or (type(set) == "table" and is_record_set_object(set)) then
    local count = method(set, "count")
    if type(count) == "function" then
      for _, name in ipairs { "record", "row" } do
        local get = method(set, name)
        local n = type(get) == "function" and count(set)
        if n and (n == 0 or type(get(set, 1)) == "table") then
          local out = {}
          for i = 1, n do out[i] = get(set, i) end
          return out
        end
      end
    end
    local records = method(set, "records")
    if type(records) == "function" then
      local a = records(set)
      if type(a) == "table" then
        local out = {}
        for i = 1, #a do out[i] = a[i] end
        return out
      end
    end
  end
  if type(set) ~= "table" then
    error(("%s: expected a record set or an array of records, got %s"):format(what, type(set)), 3)
  end
  if is_record_set_object(set) then
    for _, name in ipairs { "rows", "each", "iter", "records" } do
      local f = set[name]
      if type(f) == "function" then
        local a, b, c = f(set)
        local out = {}
        if type(a) == "function" then
          for x, y in a, b, c do out[#out + 1] = type(x) == "table" and x or y end
          return out
        elseif type(a) == "table" then
          for i = 1, #a do out[i] = a[i] end
          return out
        end
      elseif type(f) == "table" then
        local out = {}
        for i = 1, #f do out[i] = f[i] end
        return out
      end
    end
  end
  if rawlen(set) == 0 and next(set) ~= nil and rawget(set, 1) == nil then
    -- a single record (seq = .., ...) passed where a set was expected
    error(("%s: expected a record set or an array of records, got a table with no array part (a single record?)")
      :format(what), 3)
  end
  for i = 1, #set do
    if type(set[i]) ~= "table" then
      error(("%s: element %d is a %s, not a record table"):format(what, i, type(set[i])), 3)
    end
  end
  return set
end

-- Field names in line order for a record (its _fields, or the default
-- schema's when it has none).
function M.fields(r)
  local f = r._fields
  if type(f) == "table" then return f end
  local d = defaults()
  return d and d.fields or {}
end

function M.prefix(r)
  local p = r._prefix
  if type(p) == "string" then return p end
  local d = defaults()
  return d and d.prefix or DEFAULT_PREFIX
end

-- The parts of a schema, derived once per _fields table.
local layouts = setmetatable({}, { __mode = "k" })

local function phase_short(label) return (label:gsub("_ns$", "")) end
local function nested_short(label) return (label:gsub("^sub_", ""):gsub("_ns$", "")) end

local function derive(fields)
  local idx = {}
  for i, f in ipairs(fields) do idx[f] = i end
  local L = { fields = fields, index = idx, phases = {}, nested = {}, counts = {},
    caches = {}, parent = {} }
  local k, named = idx.kernel_ns, idx.named_host_ns
  if k and named and k < named then
    for i = k + 1, named - 1 do
      local f = fields[i]
      if f:match("^sub_.+_ns$") then
        L.nested[#L.nested + 1] = f
      elseif f:match("_ns$") then
        L.phases[#L.phases + 1] = f
      end
    end
  end
  if idx.seq and idx.wall_ns and idx.seq < idx.wall_ns then
    for i = idx.seq + 1, idx.wall_ns - 1 do L.counts[#L.counts + 1] = fields[i] end
  end
  for _, f in ipairs(fields) do
    local c = f:match("^(.-)_cache_hits$")
    if c then L.caches[#L.caches + 1] = c end
  end
  -- A nested region sits inside the phase whose short name prefixes its own
  -- ("ptx_digest" inside "ptx"); the longest such phase wins.
  for _, n in ipairs(L.nested) do
    local ns, best = nested_short(n), nil
    for _, p in ipairs(L.phases) do
      local ps = phase_short(p)
      if (ns == ps or ns:sub(1, #ps + 1) == ps .. "_") and (not best or #ps > #phase_short(best)) then
        best = p
      end
    end
    L.parent[n] = best
  end
  L.is_field = idx
  return L
end

-- { phases = {labels}, nested = {labels}, counts = {names}, caches = {names},
--   parent = {nested label -> phase label or nil}, fields, index }
function M.layout(r)
  local fields = M.fields(r)
  local L = layouts[fields]
  if not L then
    L = derive(fields)
    layouts[fields] = L
  end
  return L
end

-- Tags, sorted: every schema field holds an integer except kernel_src, and
-- tags are strings, so a string value other than kernel_src is a tag. (This
-- also holds for records read back from CSV or JSON lines, whose _fields
-- list every column.)
function M.tags(r)
  local out = {}
  for k, v in pairs(r) do
    if type(k) == "string" and type(v) == "string" and k ~= "kernel_src" and k:sub(1, 1) ~= "_" then
      out[#out + 1] = k
    end
  end
  table.sort(out)
  return out
end

-- Every key of the record in print order: fields in line order, then the
-- rest sorted by name (as the record's line prints them).
function M.ordered_keys(r)
  local fields = M.fields(r)
  local out, seen = {}, {}
  for _, f in ipairs(fields) do
    if r[f] ~= nil and not seen[f] then
      out[#out + 1] = f
      seen[f] = true
    end
  end
  local extra = {}
  for k in pairs(r) do
    if type(k) == "string" and not seen[k] then extra[#extra + 1] = k end
  end
  table.sort(extra)
  for _, k in ipairs(extra) do out[#out + 1] = k end
  return out
end

-- The integer value of a field, 0 when absent. u64 values above 2^63-1 are
-- negative Lua integers; for time fields such values are absurd and read
-- as saturated (math.maxinteger) so sums stay ordered.
function M.u(r, name)
  local v = r[name]
  if math.type(v) == "integer" then
    return v < 0 and math.maxinteger or v
  elseif type(v) == "number" then
    return math.max(0, math.floor(v))
  end
  return 0
end

-- Saturating addition of non-negative integers.
function M.sat_add(a, b)
  local s = a + b
  if s < a then return math.maxinteger end
  return s
end

-- Decimal text of a u64 held in a Lua integer (negative = above 2^63-1).
function M.u64_text(v)
  if v >= 0 then return string.format("%d", v) end
  local q = (v >> 1) // 5 -- floor(unsigned v / 10): the shift is logical
  local rem = v - q * 10  -- wraps to 0..9
  return string.format("%d%d", q, rem)
end

local U64_MAX_TEXT = "18446744073709551615"

-- The Lua integer holding decimal text of an unsigned 64-bit value, wrapping
-- above 2^63-1 as the C module does; nil when out of range.
function M.parse_u64(s)
  s = s:gsub("^0+(%d)", "%1")
  if #s > 20 or (#s == 20 and s > U64_MAX_TEXT) then return nil end
  local v = 0
  for i = 1, #s do v = v * 10 + (s:byte(i) - 48) end
  return v
end

-- Integer text (optionally negative) to a Lua integer; nil when it does not fit.
function M.parse_int(s)
  local neg, digits = s:match("^(%-?)(%d+)$")
  if not digits then return nil end
  local v = M.parse_u64(digits)
  if v == nil then return nil end
  if neg == "-" then
    if v < 0 and v ~= math.mininteger then return nil end
    return -v
  end
  return v
end

-- Records read back from a file get a metatable like the C module's: r._fields
-- (a read-only view), r._prefix, and a __tostring that prints the line
-- (fields in order, then the rest sorted) from its own copy of the names.
-- Metatables are shared per layout while some record holds one.
local mts = setmetatable({}, { __mode = "v" })

local function readonly(list)
  return setmetatable({}, {
    __index = list,
    __newindex = function() error("phaseprobe.record: the field list (r._fields) is read-only", 2) end,
    __len = function() return #list end,
    __pairs = function() return next, list, nil end,
    __metatable = false,
  })
end

local function value_text(v)
  if math.type(v) == "integer" then return M.u64_text(v) end
  if type(v) == "string" or type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  return type(v)
end

function M.record_mt(prefix, fields)
  local key = prefix .. "\0" .. table.concat(fields, "\0")
  local mt = mts[key]
  if not mt then
    local own, known = {}, {}
    for i, f in ipairs(fields) do own[i] = f; known[f] = true end
    mt = { __index = { _prefix = prefix, _fields = readonly(own) }, __name = "phaseprobe.record" }
    mt.__tostring = function(r)
      local parts = { prefix }
      for _, k in ipairs(own) do
        local v = rawget(r, k)
        if v ~= nil then parts[#parts + 1] = " " .. k .. "=" .. value_text(v) end
      end
      local extra = {}
      for k in pairs(r) do
        if type(k) == "string" and not known[k] then extra[#extra + 1] = k end
      end
      table.sort(extra)
      for _, k in ipairs(extra) do parts[#parts + 1] = " " .. k .. "=" .. value_text(rawget(r, k)) end
      return table.concat(parts)
    end
    mts[key] = mt
  end
  return mt
end

M.DEFAULT_PREFIX = DEFAULT_PREFIX
M.phase_short = phase_short
M.nested_short = nested_short

return M
