--- phaseprobe ptx: what the PTX scanner finds in PTX files (pp.ptx.scan),
-- as text: the module, then per entry point its launch bounds, parameters,
-- registers, counts and variables, then the functions, the module's
-- variables and the errors of a partial scan.
local cli = require "phaseprobe.cli"
local report = require "phaseprobe.output.report"

local C = {
  summary = "scan PTX files: entry points with parameters, launch bounds, registers, grid syncs",
  usage = [[
usage: phaseprobe ptx [--strict] [--raw] FILE.ptx...

Runs the PTX scanner (phaseprobe.ptx.scan) over each file ("-" for standard
input) and prints, for each:
  - the module: PTX version, target, address size, bytes, lines, digest,
    whether it synchronises the grid, the barrier markers and whether the
    counter global is declared;
  - each entry point: where it is, its launch bounds (.maxntid, .reqntid,
    .minnctapersm, .maxnreg, or none declared), its parameters (name, type,
    size, alignment, array length, offset in the parameter buffer, .ptr),
    its registers by class, its instruction, barrier, atomic and grid-sync
    counts, and the variables its body declares with its shared and local
    bytes;
  - the names of the functions (.func);
  - the module's .global, .const, .shared and .local variables;
  - for a partial scan, each error as FILE:LINE:COLUMN: what.

options:
  --strict   a partial scan (text the scanner could not read whole) is bad
             input: exit status 1, after printing what was found
  --raw      exact integers instead of thousands separators]],
}

local REG_ORDER = { ".pred", ".b8", ".b16", ".b32", ".b64", ".b128", ".u8", ".u16", ".u32",
  ".u64", ".s8", ".s16", ".s32", ".s64", ".f16", ".f16x2", ".bf16", ".bf16x2", ".f32", ".f64",
  "other" }

-- A file ("-": standard input) as a string, up to `cap` bytes: text, or
-- nil and a message naming it (missing, a directory, too large). Reading
-- stops after the first NUL byte, where the scanner stops (as
-- pp.ptx.scan_file does).
local function read_input(path, cap)
  local name = path == "-" and "(stdin)" or path
  local f, err = io.stdin, nil
  if path ~= "-" then
    f, err = io.open(path, "rb")
    if not f then return nil, err or (name .. ": cannot open") end
  end
  local parts, n = {}, 0
  local result, msg
  while true do
    local chunk, rerr = f:read(1 << 16)
    if chunk == nil then
      if rerr then msg = name .. ": " .. tostring(rerr) end
      break
    end
    n = n + #chunk
    if n > cap then
      msg = ("%s: larger than %s (the PTX scanner's limit on one input)"):format(name,
        report.count(cap, "byte"))
      break
    end
    local nul = chunk:find("\0", 1, true)
    parts[#parts + 1] = nul and chunk:sub(1, nul) or chunk
    if nul then break end
  end
  if f ~= io.stdin then f:close() end
  if not msg then result = table.concat(parts) end
  return result, msg
end

local num = function(v) return report.num(v) end

-- A count's text and its noun: "1 byte", "12 bytes", "? bytes" (text:
-- what the count prints as, when it is not num(v)).
local function counted(v, word, text)
  text = text or num(v)
  return text .. " " .. (text == "1" and word or word .. "s")
end

-- ---- numbers PTX cannot hold ---------------------------------------------------
-- A partial scan names each number PTX cannot hold (an alignment that is
-- no power of two, a count past 2^63-1, a bound past 2^32-1) in its errors,
-- and keeps a clamped or default value in its place: such a value prints
-- as INVALID, never as a number. marks[item][field] = true for each; the
-- item is the result, an entry, a parameter or a variable.
local INVALID = "?"

-- The fields an error's message is about.
local function error_fields(what)
  if what:match("^%.align") then return { "align" } end
  if what:match("^array length") then return { "array", "size" } end
  if what:match("^size in bytes") then return { "size" } end
  if what:match("^parameter buffer offset") then return { "offset" } end
  if what:match("^register") then return { "registers" } end
  local space = what:match("^(%a+) bytes of '")
  if space then return { space .. "_bytes" } end
  local dir = what:match("^(%.[%a_]+) [^:]*: past 2%^32%-1")
  if dir then return { dir } end
  return {}
end

-- Byte offset (1-based) where each line of text starts.
local function line_starts(text)
  local starts, pos = { 1 }, 1
  while true do
    local nl = text:find("\n", pos, true)
    if not nl then break end
    starts[#starts + 1] = nl + 1
    pos = nl + 1
  end
  return starts
end

-- The parameter of entry e whose declaration holds byte offset at (0-based),
-- found in the text by the parameters' names, in order; or nil.
local function param_at(e, text, starts, at)
  local from = starts[e.line] or 1
  local stop = (e.body_begin or #text) + 1
  local pos = text:find("(", from, true)
  if not pos or pos > stop then return nil end
  local spans = {}
  for i, p in ipairs(e.params or {}) do
    local a, b = text:find("%f[%w_$%%]" .. p.name:gsub("%p", "%%%0") .. "%f[^%w_$]", pos)
    if not a or a > stop then return nil end
    local stop_at = text:find("[,)]", b + 1) or stop
    spans[i] = { pos, stop_at }
    pos = stop_at + 1
  end
  for i, sp in ipairs(spans) do
    if at + 1 >= sp[1] and at + 1 <= sp[2] then return e.params[i] end
  end
end

local function mark(marks, item, field)
  marks[item] = marks[item] or {}
  marks[item][field] = true
end

--- The marks of a scan result (text: the scanned text, to place errors in
-- a parameter list; without it a parameter's value marks itself when it is
-- a clamp: 2^63-1, or an alignment no power of two).
function C.invalid(r, text)
  local marks = {}
  if not r.partial then return marks end
  local starts = text and line_starts(text)
  local entries = r.entries or {}
  for _, err in ipairs(r.errors or {}) do
    local fields = error_fields(err.what or "")
    local placed = false
    for _, e in ipairs(entries) do
      local body = err.offset and e.body_begin and err.offset >= e.body_begin
        and err.offset <= (e.body_end or e.body_begin)
      local head = err.line and err.line >= (e.line or 0) and err.offset and e.body_begin
        and err.offset < e.body_begin
      if head or body then
        placed = true
        for _, f in ipairs(fields) do
          if f:match("^%.") or f:match("_bytes$") or f == "registers" then
            mark(marks, e, f)
          end
        end
        for _, v in ipairs(e.vars or {}) do
          if v.line == err.line then
            for _, f in ipairs(fields) do mark(marks, v, f) end
          end
        end
        if head and text then
          local p = param_at(e, text, starts, err.offset)
          if p then for _, f in ipairs(fields) do mark(marks, p, f) end end
        end
      end
    end
    if not placed then
      for _, g in ipairs(r.globals or {}) do
        if g.line == err.line then
          for _, f in ipairs(fields) do mark(marks, g, f) end
        end
      end
      for _, f in ipairs(fields) do
        if f == ".address_size" then mark(marks, r, "address_size") end
      end
    end
  end
  local MAX = math.maxinteger
  for _, e in ipairs(entries) do
    local m = marks[e] or {}
    -- values that follow from a marked one
    local after = false
    for _, p in ipairs(e.params or {}) do
      if not text then
        if p.size == MAX then mark(marks, p, "size") end
        if p.array == MAX then mark(marks, p, "array") end
        if p.offset == MAX then mark(marks, p, "offset") end
        local a = p.align or 1
        if a <= 0 or a & (a - 1) ~= 0 then mark(marks, p, "align") end
      end
      local pm = marks[p] or {}
      if after or p.offset == MAX then mark(marks, p, "offset") end
      if pm.size or pm.offset or pm.align then after = true end
    end
    if after then mark(marks, e, "param_bytes") end
    for _, v in ipairs(e.vars or {}) do
      if (marks[v] or {}).size and (v.space == "shared" or v.space == "local") then
        mark(marks, e, v.space .. "_bytes")
      end
    end
    if m.registers then
      marks[e].reg_classes = {}
      for c, n in pairs(e.registers or {}) do
        if n == MAX then marks[e].reg_classes[c] = true end
      end
    end
  end
  return marks
end

-- A value, or INVALID where marks say so.
local function shown(marks, item, field, v, fmt)
  local m = marks[item]
  if m and m[field] then return INVALID end
  return (fmt or num)(v)
end

local function dims(d)
  if type(d) ~= "table" then return tostring(d) end
  local t = {}
  for i, v in ipairs(d) do t[i] = num(v) end
  return table.concat(t, ", ")
end

-- A launch bound past 2^32-1 is kept as 2^32-1: INVALID where it is marked.
local U32_MAX = 0xffffffff

local function bounds(e, marks)
  local m = marks[e] or {}
  local function bound(name, v)
    if m[name] then
      if type(v) == "table" then
        local t = {}
        for i, x in ipairs(v) do t[i] = x == U32_MAX and INVALID or num(x) end
        return name .. " " .. table.concat(t, ", ")
      end
      return name .. " " .. INVALID
    end
    return name .. " " .. dims(v)
  end
  local t = {}
  for _, name in ipairs { "maxntid", "reqntid", "minnctapersm", "maxnreg" } do
    if e[name] then t[#t + 1] = bound("." .. name, e[name]) end
  end
  return #t > 0 and table.concat(t, "; ") or "none declared"
end

local function registers(regs, bad)
  bad = bad or {}
  local function one(c) return c .. " " .. (bad[c] and INVALID or num(regs[c])) end
  local t, seen = {}, {}
  for _, c in ipairs(REG_ORDER) do
    if regs[c] then t[#t + 1] = one(c); seen[c] = true end
  end
  local rest = {}
  for c in pairs(regs) do if not seen[c] then rest[#rest + 1] = tostring(c) end end
  table.sort(rest)
  for _, c in ipairs(rest) do t[#t + 1] = one(c) end
  return #t > 0 and table.concat(t, ", ") or "none declared"
end

local function yes(b) return b and "yes" or "" end

-- A column of a number that may be marked INVALID (row._marks).
local function checked(key, title, blank_zero)
  return { key = key, title = title, align = "right", fmt = function(v, row)
    if row._marks and row._marks[key] then return INVALID end
    if blank_zero and v == 0 then return "" end
    return num(v)
  end }
end

-- A declaration's storage columns (type, size, align, array), which the
-- tables of parameters and of variables share, between first and last.
local STORAGE_COLS = {
  { key = "type", title = "type", fmt = function(v) return v ~= "" and v or "-" end },
  checked("size", "size"), checked("align", "align"), checked("array", "array", true),
}
local function around_storage(first, last)
  local t = {}
  for _, cols in ipairs { first, STORAGE_COLS, last } do
    for _, c in ipairs(cols) do t[#t + 1] = c end
  end
  return t
end

local PARAM_COLS = around_storage(
  { { key = "i", title = "#" }, { key = "name", title = "name" } },
  { checked("offset", "offset"), { key = "ptr", title = "ptr", fmt = yes } })

local VAR_COLS = around_storage(
  { { key = "name", title = "name" }, { key = "space", title = "space" } },
  { { key = "extern", title = "extern", fmt = yes }, { key = "visible", title = "visible", fmt = yes },
    { key = "line", title = "line" } })

local function param_rows(params, marks)
  local rows = {}
  for i, p in ipairs(params) do
    rows[i] = { i = i, name = p.name, type = p.type, size = p.size, align = p.align,
      array = p.array, offset = p.offset, ptr = p.ptr, _marks = marks[p] }
  end
  return rows
end

local function var_rows(vars, marks)
  local rows = {}
  for i, v in ipairs(vars) do
    local row = {}
    for k, x in pairs(v) do row[k] = x end
    row._marks = marks[v]
    rows[i] = row
  end
  return rows
end

local function param_bytes(params)
  local last = params[#params]
  return last and (last.offset + last.size) or 0
end

-- A line of the text, wrapped at the report's width under its first words.
local function say(out, text)
  for _, l in ipairs(report.wrap(text, report.width, "    ", "  ")) do out[#out + 1] = l end
end

local function func_text(kind, e, marks)
  local out = {}
  local m = marks[e] or {}
  local flags = {}
  if e.visible then flags[#flags + 1] = "visible" end
  if e.extern then flags[#flags + 1] = "extern" end
  if e.weak then flags[#flags + 1] = "weak" end
  if not e.defined then flags[#flags + 1] = "declared only" end
  out[#out + 1] = ("%s %s (line %s, column %s%s)"):format(kind, e.name, num(e.line), num(e.col),
    #flags > 0 and (", " .. table.concat(flags, ", ")) or "")
  say(out, "launch bounds: " .. bounds(e, marks))
  if #e.params == 0 then
    out[#out + 1] = "  parameters: none"
  else
    local bytes = param_bytes(e.params)
    out[#out + 1] = ("  parameters: %s, %s"):format(num(#e.params),
      counted(bytes, "byte", (m.param_bytes or bytes < 0) and INVALID or nil))
    out[#out + 1] = report.table(param_rows(e.params, marks), PARAM_COLS, { indent = "    " })
  end
  say(out, "registers: " .. registers(e.registers or {}, m.reg_classes))
  say(out, ("instructions %s: barriers (bar, barrier) %s, atomics %s (on global %s)"):format(
    num(e.instructions), num(e.bar_sync), num(e.atomics), num(e.atomics_global)))
  say(out, ("grid syncs %s, barrier markers %s"):format(num(e.grid_syncs), num(e.barrier_markers)))
  say(out, ("shared %s, local %s"):format(
    counted(e.shared_bytes, "byte", shown(marks, e, "shared_bytes", e.shared_bytes)),
    counted(e.local_bytes, "byte", shown(marks, e, "local_bytes", e.local_bytes))))
  if e.vars and #e.vars > 0 then
    out[#out + 1] = "  variables:"
    out[#out + 1] = report.table(var_rows(e.vars, marks), VAR_COLS, { indent = "    " })
  end
  return table.concat(out, "\n")
end

--- The text of one scan result (name: the file, for the errors; text: the
-- scanned text, to place a partial scan's errors; see C.invalid).
function C.text(r, name, text)
  local marks = C.invalid(r, text)
  local out = {}
  local head = {}
  head[#head + 1] = r.version and ("PTX " .. r.version) or "no .version"
  head[#head + 1] = r.target and ("target " .. r.target) or "no .target"
  head[#head + 1] = r.address_size and (shown(marks, r, "address_size", r.address_size)
    .. "-bit addresses") or "no .address_size"
  out[#out + 1] = ("%s: %s, %s%s"):format(table.concat(head, ", "), counted(r.bytes, "byte"),
    counted(r.lines, "line"), r.digest and (", digest " .. r.digest) or "")
  local counted = {}
  local mk = {}
  for m in pairs(r.markers or {}) do mk[#mk + 1] = m end
  table.sort(mk)
  for _, m in ipairs(mk) do counted[#counted + 1] = ("%q %s"):format(m, num(r.markers[m])) end
  out[#out + 1] = ("grid sync: %s; barrier markers: %s; counter global: %s"):format(
    r.grid_sync and "yes" or "no", #counted > 0 and table.concat(counted, ", ") or "none",
    r.counter_global and "declared" or "not declared")
  local entries = r.entries or {}
  out[#out + 1] = ("entry points: %s; functions: %s"):format(num(#entries), num(#(r.funcs or {})))
  for _, e in ipairs(entries) do
    out[#out + 1] = ""
    out[#out + 1] = func_text("entry", e, marks)
  end
  local funcs = r.funcs or {}
  if #funcs > 0 then
    local names = {}
    for i, f in ipairs(funcs) do names[i] = type(f) == "table" and f.name or tostring(f) end
    out[#out + 1] = ""
    for _, l in ipairs(report.wrap("functions: " .. table.concat(names, ", "), report.width, "  ", "")) do
      out[#out + 1] = l
    end
  end
  out[#out + 1] = ""
  if r.globals and #r.globals > 0 then
    out[#out + 1] = "module variables:"
    out[#out + 1] = report.table(var_rows(r.globals, marks), VAR_COLS, { indent = "  " })
  else
    out[#out + 1] = "module variables: none"
  end
  if r.partial then
    out[#out + 1] = ""
    out[#out + 1] = "partial result: the scanner could not read the whole text"
    if next(marks) then
      out[#out + 1] = "(" .. INVALID .. " above: a number PTX cannot hold, named in these errors)"
    end
    for _, e in ipairs(r.errors or {}) do
      out[#out + 1] = ("  %s:%d:%d: %s"):format(name, e.line, e.col, e.what)
    end
    if (r.errors_dropped or 0) > 0 then
      out[#out + 1] = ("  ... and %s more"):format(counted(r.errors_dropped, "error"))
    end
  end
  return table.concat(out, "\n")
end

function C.run(args, ctx)
  local opts, files = ctx.options(args, { ["--strict"] = "flag", ["--raw"] = "flag" })
  if #files == 0 then ctx.usage("no input: give one or more PTX files, or - for standard input") end
  local pp = require "phaseprobe"
  local ptx = type(pp.ptx) == "table" and pp.ptx or {}
  local scan = ptx.scan
  if type(scan) ~= "function" then
    ctx.fail("pp.ptx.scan is not available in this build of the phaseprobe module")
  end
  local cap = math.tointeger(ptx.max_bytes) or (8 << 30)
  local partial = {}
  for i, path in ipairs(files) do
    local name = path == "-" and "(stdin)" or path
    local text, err = read_input(path, cap)
    if not text then ctx.fail(err) end
    local ok, res, msg = pcall(scan, text)
    if not ok then ctx.fail(name .. ": " .. tostring(res)) end
    if res == nil then ctx.fail(name .. ": " .. tostring(msg or "the scanner returned nothing")) end
    if #files > 1 then ctx.write(i > 1 and "\n" or "", "== ", name, "\n") end
    ctx.write(C.text(res, name, text), "\n")
    if res.partial then
      local first = (res.errors or {})[1]
      partial[#partial + 1] = first and ("%s:%d:%d: %s"):format(name, first.line, first.col, first.what)
        or (name .. ": partial result")
    end
  end
  if #partial > 0 then
    for _, p in ipairs(partial) do ctx.err:write("phaseprobe ptx: partial scan: ", p, "\n") end
    if opts.strict then return 1 end
  end
  return 0
end

return C
