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
      msg = ("%s: larger than %d bytes (the PTX scanner's limit on one input)"):format(name, cap)
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

local function dims(d)
  if type(d) ~= "table" then return tostring(d) end
  local t = {}
  for i, v in ipairs(d) do t[i] = num(v) end
  return table.concat(t, ", ")
end

local function bounds(e)
  local t = {}
  if e.maxntid then t[#t + 1] = ".maxntid " .. dims(e.maxntid) end
  if e.reqntid then t[#t + 1] = ".reqntid " .. dims(e.reqntid) end
  if e.minnctapersm then t[#t + 1] = ".minnctapersm " .. num(e.minnctapersm) end
  if e.maxnreg then t[#t + 1] = ".maxnreg " .. num(e.maxnreg) end
  return #t > 0 and table.concat(t, "; ") or "none declared"
end

local function registers(regs)
  local t, seen = {}, {}
  for _, c in ipairs(REG_ORDER) do
    if regs[c] then t[#t + 1] = c .. " " .. num(regs[c]); seen[c] = true end
  end
  local rest = {}
  for c in pairs(regs) do if not seen[c] then rest[#rest + 1] = tostring(c) end end
  table.sort(rest)
  for _, c in ipairs(rest) do t[#t + 1] = c .. " " .. num(regs[c]) end
  return #t > 0 and table.concat(t, ", ") or "none declared"
end

local function yes(b) return b and "yes" or "" end

local PARAM_COLS = {
  { key = "i", title = "#" },
  { key = "name", title = "name" },
  { key = "type", title = "type", fmt = function(v) return v ~= "" and v or "-" end },
  { key = "size", title = "size" },
  { key = "align", title = "align" },
  { key = "array", title = "array", fmt = function(v) return v ~= 0 and num(v) or "" end },
  { key = "offset", title = "offset" },
  { key = "ptr", title = "ptr", fmt = yes },
}

local VAR_COLS = {
  { key = "name", title = "name" },
  { key = "space", title = "space" },
  { key = "type", title = "type", fmt = function(v) return v ~= "" and v or "-" end },
  { key = "size", title = "size" },
  { key = "align", title = "align" },
  { key = "array", title = "array", fmt = function(v) return v ~= 0 and num(v) or "" end },
  { key = "extern", title = "extern", fmt = yes },
  { key = "visible", title = "visible", fmt = yes },
  { key = "line", title = "line" },
}

local function param_rows(params)
  local rows = {}
  for i, p in ipairs(params) do
    rows[i] = { i = i, name = p.name, type = p.type, size = p.size, align = p.align,
      array = p.array, offset = p.offset, ptr = p.ptr }
  end
  return rows
end

local function param_bytes(params)
  local last = params[#params]
  return last and (last.offset + last.size) or 0
end

local function func_text(kind, e)
  local out = {}
  local flags = {}
  if e.visible then flags[#flags + 1] = "visible" end
  if e.extern then flags[#flags + 1] = "extern" end
  if e.weak then flags[#flags + 1] = "weak" end
  if not e.defined then flags[#flags + 1] = "declared only" end
  out[#out + 1] = ("%s %s (line %s, column %s%s)"):format(kind, e.name, num(e.line), num(e.col),
    #flags > 0 and (", " .. table.concat(flags, ", ")) or "")
  out[#out + 1] = "  launch bounds: " .. bounds(e)
  if #e.params == 0 then
    out[#out + 1] = "  parameters: none"
  else
    out[#out + 1] = ("  parameters: %s, %s bytes"):format(num(#e.params), num(param_bytes(e.params)))
    out[#out + 1] = report.table(param_rows(e.params), PARAM_COLS, { indent = "    " })
  end
  out[#out + 1] = "  registers: " .. registers(e.registers or {})
  out[#out + 1] = ("  instructions %s: barriers (bar, barrier) %s, atomics %s (on global %s), "
    .. "grid syncs %s, barrier markers %s"):format(num(e.instructions), num(e.bar_sync),
    num(e.atomics), num(e.atomics_global), num(e.grid_syncs), num(e.barrier_markers))
  out[#out + 1] = ("  shared %s bytes, local %s bytes"):format(num(e.shared_bytes), num(e.local_bytes))
  if e.vars and #e.vars > 0 then
    out[#out + 1] = "  variables:"
    out[#out + 1] = report.table(e.vars, VAR_COLS, { indent = "    " })
  end
  return table.concat(out, "\n")
end

--- The text of one scan result (name: the file, for the errors).
function C.text(r, name)
  local out = {}
  local head = {}
  head[#head + 1] = r.version and ("PTX " .. r.version) or "no .version"
  head[#head + 1] = r.target and ("target " .. r.target) or "no .target"
  head[#head + 1] = r.address_size and (num(r.address_size) .. "-bit addresses") or "no .address_size"
  out[#out + 1] = ("%s: %s bytes, %s lines%s"):format(table.concat(head, ", "), num(r.bytes),
    num(r.lines), r.digest and (", digest " .. r.digest) or "")
  local marks = {}
  local mk = {}
  for m in pairs(r.markers or {}) do mk[#mk + 1] = m end
  table.sort(mk)
  for _, m in ipairs(mk) do marks[#marks + 1] = ("%q %s"):format(m, num(r.markers[m])) end
  out[#out + 1] = ("grid sync: %s; barrier markers: %s; counter global: %s"):format(
    r.grid_sync and "yes" or "no", #marks > 0 and table.concat(marks, ", ") or "none",
    r.counter_global and "declared" or "not declared")
  local entries = r.entries or {}
  out[#out + 1] = ("entry points: %s; functions: %s"):format(num(#entries), num(#(r.funcs or {})))
  for _, e in ipairs(entries) do
    out[#out + 1] = ""
    out[#out + 1] = func_text("entry", e)
  end
  local funcs = r.funcs or {}
  if #funcs > 0 then
    local names = {}
    for i, f in ipairs(funcs) do names[i] = type(f) == "table" and f.name or tostring(f) end
    out[#out + 1] = ""
    out[#out + 1] = "functions: " .. table.concat(names, ", ")
  end
  out[#out + 1] = ""
  if r.globals and #r.globals > 0 then
    out[#out + 1] = "module variables:"
    out[#out + 1] = report.table(r.globals, VAR_COLS, { indent = "  " })
  else
    out[#out + 1] = "module variables: none"
  end
  if r.partial then
    out[#out + 1] = ""
    out[#out + 1] = "partial result: the scanner could not read the whole text"
    for _, e in ipairs(r.errors or {}) do
      out[#out + 1] = ("  %s:%d:%d: %s"):format(name, e.line, e.col, e.what)
    end
    if (r.errors_dropped or 0) > 0 then
      out[#out + 1] = ("  ... and %s more errors"):format(num(r.errors_dropped))
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
    ctx.write(C.text(res, name), "\n")
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
