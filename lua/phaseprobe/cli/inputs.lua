--- phaseprobe.cli.inputs: the one input path of every command that reads
-- records. Logs of record lines, CSV and JSON-lines exports (told apart by
-- the file's extension, else by content, on standard input always:
-- M.format_of) all go through the line parser (pp.parse) into one record
-- set; --where then selects from it (exactly: M.where).
--
--   local set, rep = inputs.read(ctx, files)    -- ctx.opts: the input options
--
-- Damaged input: a record line the parser rejects, a CSV row with the wrong
-- number of cells or a broken quote, a JSON line that is not a flat object.
-- Each is counted in rep.rejected and listed in rep.errors (file, line,
-- column, what: for a CSV row, column is the cell and what names it; for
-- a JSON line, column is 0); the first few are named on stderr with the count, and the
-- command goes on without them. Under --strict any damaged line is an input
-- error (exit status 1) before anything is written.
--
-- Memory: a log file is read by the C reader in chunks; everything else
-- (standard input, pipes, CSV, JSON lines) through a chunked line reader
-- that keeps at most one line of pp.parse.max_line bytes (a longer line is
-- passed on cut, and the parser rejects it as too long). CSV rows and JSON
-- objects become record lines ("record name=value ...", or the default
-- schema's prefix when every field of the reference's line is there), so
-- every format meets the same parser, caps and line numbers.
local pp = require "phaseprobe"
local cli = require "phaseprobe.cli"
local records = require "phaseprobe.records"
local csv = require "phaseprobe.output.csv"
local json = require "phaseprobe.output.json"
local files = require "phaseprobe.output.files"
local report = require "phaseprobe.output.report"

local M = {}

local CHUNK = 1 << 16

--- How many damaged lines are named on stderr (the rest are counted).
M.SHOW = 5

-- ---- format ----------------------------------------------------------------

--- "log", "csv" or "jsonl" for an input: by the name's extension (.csv,
-- .jsonl, .ndjson, .log), else by content (standard input always): JSON
-- lines when the first line that is no comment ('#') is a JSON object, CSV
-- when it is a header of field names followed by a row of as many cells
-- (phaseprobe.output.files.format_of).
function M.format_of(path, head)
  return files.format_of(path, head or "")
end

-- ---- lines -----------------------------------------------------------------

-- Lines of an open file, read in chunks, starting with the text `first`
-- already read. A line longer than max_line is passed on cut to max_line+1
-- bytes (the parser rejects it as too long) and the rest of it dropped.
-- on_chunk(bytes) is called after each chunk read.
local function line_reader(f, first, max_line, on_chunk, name)
  local buf, pos = first or "", 1
  local eof = first == nil
  local skipping = false
  return function()
    while true do
      local nl = buf:find("\n", pos, true)
      if nl then
        local line = buf:sub(pos, nl - 1)
        pos = nl + 1
        if not skipping then return line end
        skipping = false
      elseif eof then
        if pos <= #buf and not skipping then
          local line = buf:sub(pos)
          pos = #buf + 1
          return line
        end
        return nil
      else
        local rest = skipping and "" or buf:sub(pos)
        if #rest > max_line then
          skipping = true
          buf, pos = "", 1
          return rest:sub(1, max_line + 1)
        end
        local chunk, err = f:read(CHUNK)
        if chunk == nil then
          if err then cli.input_error(name .. ": " .. tostring(err)) end
          eof = true
          buf, pos = rest, 1
        else
          buf, pos = rest .. chunk, 1
          if on_chunk then on_chunk(#chunk) end
        end
      end
    end
  end
end

-- ---- CSV and JSON lines as record lines ------------------------------------

local REFERENCE -- the fields of the reference's line, in order

local function reference_fields()
  if not REFERENCE then
    REFERENCE = {}
    local s = pp.default_schema()
    for _, f in ipairs(s.fields) do
      REFERENCE[#REFERENCE + 1] = f
      if f:match("_cache_misses$") then break end
    end
    REFERENCE.prefix = s.prefix
  end
  return REFERENCE
end

-- The prefix record lines made from these names get: --prefix's first
-- word, else the default schema's when every field of the reference's
-- line is there (so the parser checks them as it checks such a log), else
-- "record".
local function prefix_for(names, given)
  if given and given[1] then return given[1] end
  local ref = reference_fields()
  for _, f in ipairs(ref) do
    if not names[f] then return "record" end
  end
  return ref.prefix
end

-- A value as shown in a message: quoted, control characters escaped.
local function shown(v)
  return '"' .. v:gsub("%c", function(c)
    return ({ ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" })[c] or string.format("\\%03d", c:byte())
  end) .. '"'
end

local function bad_value(v)
  return v == "" or v:find("[%s=%c]") ~= nil
end

-- Record lines from CSV lines (csv.rows): the header names the fields.
-- Damaged rows are noted in `bad` ({line=, what= [, cell=]}) and fed as
-- blank lines, as are a row's extra physical lines, so the parser's line
-- numbers stay those of the file. The header goes into form.header.
local function csv_feed(next_line, name, opts, bad, max_line, form)
  local rows = csv.rows(next_line, max_line)
  local header, prefix
  local seen = 0 -- physical lines accounted for
  local queue, head = {}, 1
  -- the record line of one row ("" when it gives none)
  local function line_of(row)
    if row.what then
      if not header then
        cli.input_error(string.format("%s:%d: the CSV header: %s", name, row.line, row.what))
      end
      bad[#bad + 1] = { line = row.line, what = row.what }
      return ""
    end
    if not header and (row[1] or ""):match("^%s*#") then
      return "" -- a comment line before the header
    end
    if not header then
      header = {}
      local names = {}
      for i, c in ipairs(row) do
        if not c:match("^[%a_][%w_]*$") or #c > 63 then
          cli.input_error(string.format("%s:%d: CSV column %d (%s) is not a field name", name,
            row.line, i, c ~= "" and ("'" .. c .. "'") or "empty"))
        end
        if names[c] then
          cli.input_error(string.format("%s:%d: CSV column '%s' appears twice", name, row.line, c))
        end
        names[c] = true
        header[i] = c
      end
      prefix = prefix_for(names, opts.prefix)
      form.header = header
      return ""
    end
    if #row ~= #header then
      bad[#bad + 1] = { line = row.line,
        what = string.format("%s, the header has %s", report.count(#row, "cell"),
          report.num(#header)) }
      return ""
    end
    local parts = { prefix }
    for i, c in ipairs(row) do
      if c ~= "" then
        if bad_value(c) then
          bad[#bad + 1] = { line = row.line, cell = i, what = string.format("cell %d (%s): %s "
            .. "cannot be a record value (blanks, '=' or control characters)", i, header[i], shown(c)) }
          return ""
        end
        parts[#parts + 1] = header[i] .. "=" .. c
      end
    end
    return #parts > 1 and table.concat(parts, " ") or ""
  end
  return function()
    if head > #queue then
      local row = rows()
      if row == nil then return nil end
      -- blank lines skipped before the row, the row, then its other lines
      queue, head = {}, 1
      for _ = seen + 1, row.line - 1 do queue[#queue + 1] = "" end
      queue[#queue + 1] = line_of(row)
      for _ = 2, row.lines do queue[#queue + 1] = "" end
      seen = row.line + row.lines - 1
    end
    head = head + 1
    return queue[head - 1]
  end
end

-- Record lines from JSON lines, one flat object each (json.fields).
local function jsonl_feed(next_line, opts, bad)
  local lineno = 0
  return function()
    local line = next_line()
    if line == nil then return nil end
    lineno = lineno + 1
    -- a blank line, or a comment ('#' first: no JSON object starts so)
    if not line:find("%S") or line:match("^%s*#") then return "" end
    local what
    local obj, keys, raw = json.fields(line)
    if not obj then
      what = keys
    else
      local names = {}
      for _, k in ipairs(keys) do names[k] = true end
      local parts = { prefix_for(names, opts.prefix) }
      for _, k in ipairs(keys) do
        local v = obj[k]
        local text
        if type(v) == "number" then
          text = raw[k]
        elseif type(v) == "string" then
          text = v
        else
          what = string.format("field '%s': %s is not a number or a string", k,
            raw[k] or type(v))
          break
        end
        if not k:match("^[%a_][%w_]*$") or #k > 63 then
          what = string.format("key %s is not a field name", shown(k))
          break
        end
        if bad_value(text) then
          what = string.format("field '%s': %s cannot be a record value (blanks, '=' or "
            .. "control characters)", k, shown(text))
          break
        end
        parts[#parts + 1] = k .. "=" .. text
      end
      if not what then
        if #parts == 1 then return "" end
        return table.concat(parts, " ")
      end
    end
    bad[#bad + 1] = { line = lineno, what = what }
    return ""
  end
end

-- ---- reading ---------------------------------------------------------------

local function file_size(f)
  local ok, size = pcall(f.seek, f, "end")
  if ok and math.type(size) == "integer" then return size end
  return nil
end

-- The prefixes of the record lines in a log's first chunk, whatever
-- --prefix says: { {prefix=, n=} } (for the message when --prefix leaves
-- no records).
local function prefixes_in(text)
  local ok, cols = pcall(pp.parse.string, text, {})
  if not ok or not cols then return {} end
  return cols:prefixes()
end

-- Feeds one input to the parser (form.format: which format it holds; for
-- CSV, form.header: its field names). Returns the damaged rows that the
-- parser did not see ({line=, what=}, for CSV and JSON lines) and, for a
-- log, what its first lines look like ("log", "csv", "jsonl":
-- files.format_of_text, loosely); form.prefixes: under --prefix, the
-- prefixes of the record lines in a log's first chunk (prefixes_in).
local function read_one(ctx, p, path, opts, form)
  local name = path == "-" and "(stdin)" or path
  local f, oerr
  if path == "-" then
    f = io.stdin
  else
    f, oerr = io.open(path, "rb")
    if not f then cli.input_error(oerr) end
  end
  local first, rerr = f:read(CHUNK)
  if first == nil and rerr then
    if f ~= io.stdin then f:close() end
    cli.input_error(name .. ": " .. tostring(rerr))
  end
  local format = M.format_of(path, first)
  form.format = format
  -- what a log's text looks like, for a message when it holds no records
  local looks = format == "log" and first and files.format_of_text(first, true) or nil
  if format == "log" and first and opts.prefix then form.prefixes = prefixes_in(first) end
  local size = path ~= "-" and file_size(f) or nil
  if format == "log" and size then
    -- a regular file: the C reader, with its progress callback
    f:close()
    local prog = ctx.progress("reading " .. name, { total = size, unit = "B", second = "records" })
    local ok, msg = p:file(path, function(bytes, recs) prog:update(bytes, recs) end)
    prog:done()
    if not ok then cli.input_error(msg) end
    return {}, looks
  end
  if size then f:seek("set", first and #first or 0) end
  local prog = ctx.progress("reading " .. name, { total = size, unit = "B" })
  local done = first and #first or 0
  local max_line = math.tointeger(pp.parse.max_line) or (1 << 20)
  local lines = line_reader(f, first, max_line, function(n)
    done = done + n
    prog:update(done)
  end, name)
  local bad = {}
  local feed = lines
  if format == "csv" then
    feed = csv_feed(lines, name, opts, bad, max_line, form)
  elseif format == "jsonl" then
    feed = jsonl_feed(lines, opts, bad)
  end
  local ok, err = pcall(p.lines, p, feed, name)
  prog:done()
  if f ~= io.stdin then f:close() end
  if not ok then error(err, 0) end
  return bad, looks
end

-- Adds the damaged rows found before the parser (fed to it as blank lines,
-- so counted as other) to the report as rejected lines.
local function merge_bad(rep, bad_by_file)
  local extra = {}
  for file, bad in pairs(bad_by_file) do
    local n = #bad
    if n > 0 then
      rep.rejected = rep.rejected + n
      rep.other = rep.other - n
      for _, s in ipairs(rep.files or {}) do
        if s.file == file then
          s.rejected = s.rejected + n
          s.other = s.other - n
        end
      end
      for _, b in ipairs(bad) do
        extra[#extra + 1] = { file = file, line = b.line, column = b.cell or 0, cell = b.cell ~= nil,
          what = b.what }
      end
    end
  end
  if #extra == 0 then return end
  local order = {}
  for i, s in ipairs(rep.files or {}) do order[s.file] = i end
  for _, e in ipairs(rep.errors or {}) do extra[#extra + 1] = e end
  table.sort(extra, function(a, b)
    local fa, fb = order[a.file] or 0, order[b.file] or 0
    if fa ~= fb then return fa < fb end
    return a.line < b.line
  end)
  rep.errors = extra
end

-- The parser's errors on the record lines made from CSV rows and JSON
-- objects point into those lines: they are placed in the file instead. A
-- CSV error names its row's first line and the cell ("cell 2 (wall_ns):
-- bad number 'abc'", column = the cell number, cell = true); a JSON-lines
-- error its line (column 0: the message names the field).
-- The number of the cell of field `name` in a CSV header (nil: none).
local function cell_of(header, name)
  for i, h in ipairs(header) do
    if h == name then return i end
  end
end

local function place_errors(rep, forms)
  for _, e in ipairs(rep.errors or {}) do
    local form = forms[e.file]
    if form and form.format ~= "log" and not e.placed then
      e.placed = true
      e.column = 0
      local name = e.what:match("^field '([%w_]+)'") or e.what:match("^field %d+ %('([%w_]+)'%)")
      local i = form.format == "csv" and name and form.header and cell_of(form.header, name)
      if i then
        local rest = e.what:gsub("^field [^:]*: ", "")
        e.what = string.format("cell %d (%s): %s", i, name, rest)
        e.column, e.cell = i, true
      end
    end
  end
end

-- ---- damaged lines on stderr -----------------------------------------------

--- Names the first M.SHOW damaged lines; returns the count per file as
-- one line ("run.log: 8 damaged record lines (lines 5, 9, ...)"), or nil.
function M.say_damaged(ctx, rep)
  if rep.rejected == 0 then return nil end
  local function say(text)
    ctx.err:write(table.concat(report.wrap(text, report.width, ""), "\n    "), "\n")
  end
  for i, e in ipairs(rep.errors or {}) do
    if i > M.SHOW then break end
    -- (a CSV cell or a JSON line has no column of its own: the message says where)
    if e.cell or e.column == 0 then
      say(string.format("%s:%d: %s", e.file, e.line, e.what))
    else
      say(string.format("%s:%d:%d: %s", e.file, e.line, e.column, e.what))
    end
  end
  local per = {}
  for _, s in ipairs(rep.files or {}) do
    if s.rejected > 0 then
      local lines = {}
      for _, e in ipairs(rep.errors or {}) do
        if e.file == s.file and #lines < M.SHOW then lines[#lines + 1] = tostring(e.line) end
      end
      per[#per + 1] = string.format("%s: %s (line%s %s%s)", s.file,
        report.count(s.rejected, "damaged record line"), #lines == 1 and "" or "s",
        table.concat(lines, ", "), s.rejected > #lines and ", ..." or "")
    end
  end
  return table.concat(per, "; "), say
end

-- ---- --where ----------------------------------------------------------------

--- One --where condition applied to a set: the records that meet it.
-- Numbers compare exactly over the whole u64 range and across integers
-- and floats (each value by its own text: records.condition, cols:compare);
-- a bound past every value selects nothing.
function M.where(set, spec)
  local k, op, v = records.condition(spec)
  if not k then
    cli.usage_error(string.format("--where '%s': expected F=V, F!=V, F<N, F<=N, F>N or F>=N",
      spec))
  end
  if not set:has(k) then
    local names = {}
    for _, f in ipairs(set:fields()) do
      if not f:match("_ns$") then names[#names + 1] = f end
    end
    cli.usage_error(string.format("--where %s: no field or tag '%s' in the records "
      .. "(tags and counts: %s; and the *_ns times)", spec, k, table.concat(names, ", ")))
  end
  local cols = set:columns()
  local ok, sel = pcall(cols.compare, cols, k, op, v, set:selection())
  if not ok then
    if not tostring(sel):find("compares numbers", 1, true) then error(sel, 0) end
    cli.usage_error(string.format("--where %s: %s compares numbers; '%s' is not one", spec, op, v))
  end
  return records.wrap(cols, sel)
end

-- ---- the one entry point ---------------------------------------------------

--- Reads the files (a list of paths, "-" for standard input) into one record
-- set, with ctx.opts' input options: --prefix, --numeric, --strict, --where.
-- Returns set, report (pp.parse's, with CSV and JSON-lines damage merged).
function M.read(ctx, files_, ropts)
  ropts = ropts or {}
  local opts = ctx.opts or {}
  if #files_ == 0 then
    cli.usage_error("no input: give one or more files, or - for standard input")
  end
  local stdin = 0
  for _, f in ipairs(files_) do if f == "-" then stdin = stdin + 1 end end
  if stdin > 1 then cli.usage_error("standard input (-) given more than once") end
  local p <close> = pp.parse.new { prefix = opts.prefix, numeric = opts.numeric }
  local bad_by_file, looks_like, forms = {}, {}, {}
  for _, f in ipairs(files_) do
    local name = f == "-" and "(stdin)" or f
    forms[name] = {}
    local bad, looks = read_one(ctx, p, f, opts, forms[name])
    if #bad > 0 then bad_by_file[name] = bad end
    looks_like[f] = looks
  end
  local cols, rep = p:finish()
  place_errors(rep, forms)
  merge_bad(rep, bad_by_file)
  local damaged, say = M.say_damaged(ctx, rep)
  if damaged then
    if opts.strict then cli.input_error(damaged .. ": refused (--strict)") end
    say(string.format("%s: %s: left out (--strict refuses them)", ctx.name, damaged))
  end
  if rep.parsed == 0 then
    local where = #files_ == 1 and (files_[1] == "-" and "(stdin)" or files_[1])
      or (#files_ .. " files")
    local hints = {}
    for _, f in ipairs(files_) do
      local name = f == "-" and "(stdin)" or f
      local looks = looks_like[f]
      if looks == "csv" then
        hints[#hints + 1] = name .. " looks like CSV: it is read as CSV when its name ends in "
          .. ".csv, or when its header of field names is followed by a row of as many cells"
      elseif looks == "jsonl" then
        hints[#hints + 1] = name .. " looks like JSON lines: it is read as such when its name "
          .. "ends in .jsonl or .ndjson"
      end
    end
    local text = string.format("%s: no record lines (%s: %s damaged, %s other)%s", where,
      report.count(rep.total, "line"), report.num(rep.rejected), report.num(rep.other),
      #hints > 0 and ("; " .. table.concat(hints, "; ")) or "")
    -- under --prefix, the prefixes the input's record lines do have: the
    -- option's value is then what was wrong (a usage error)
    local held, any = {}, false
    for _, f in ipairs(files_) do
      local name = f == "-" and "(stdin)" or f
      local list = {}
      for _, pr in ipairs(forms[name].prefixes or {}) do list[#list + 1] = pr.prefix end
      if #list > 0 then
        any = true
        held[#held + 1] = table.concat(list, ", ") .. (#files_ > 1 and (" in " .. name) or "")
      end
    end
    if any then
      local given = {}
      for i, pr in ipairs(opts.prefix) do given[i] = "--prefix " .. pr end
      cli.usage_error(string.format("%s; %s: no line starts with %s (the record lines start "
        .. "with %s)", text, table.concat(given, ", "), #opts.prefix == 1 and "it" or "any of them",
        table.concat(held, "; ")))
    end
    cli.input_error(text)
  end
  local set = records.wrap(cols)
  for _, w in ipairs(opts.where or {}) do
    set = M.where(set, w)
    if set:count() == 0 and not ropts.allow_empty then
      cli.input_error(string.format("no records left after --where %s (%s read)",
        w, report.count(rep.parsed, "record")))
    end
  end
  return set, rep
end

return M
