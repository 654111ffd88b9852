-- Values end to end: what a value's text stands for (the one rule, in C:
-- pp_cols_value_of_text), how the column store keeps it exactly whatever the
-- other values of its column, and that it comes back the same from a record
-- line, a record set (set:values, set[i], cols:line), a CSV and a JSON-lines
-- export read back, and a trace's args. The round trip is property-tested over random columns
-- of every mix of kinds (a seeded generator below).
local records = require "phaseprobe.records"
local export = require "phaseprobe.output.export"
local inputs = require "phaseprobe.cli.inputs"

local function set_of(lines)
  return records.from_string(table.concat(lines, "\n") .. "\n")
end

-- ---- the rule, written again in Lua: the expectation ---------------------
-- A value is a number exactly when it is written as JSON writes a number:
-- an integer without leading zeros or '+' from -2^63 to 2^64-1, or a finite
-- number with a fraction or an exponent; anything else is a string.
local function digits_le(a, b) -- decimal digit strings, no leading zeros
  if #a ~= #b then return #a < #b end
  return a <= b
end

local function int_text(t)
  local neg, d = t:match("^(%-?)(%d+)$")
  if not d or (d ~= "0" and d:sub(1, 1) == "0") or (neg == "-" and d == "0") then return false end
  if neg == "-" then return digits_le(d, "9223372036854775808") end
  return digits_le(d, "18446744073709551615")
end

local function float_text(t)
  local rest = t:match("^%-?0(.*)$") or t:match("^%-?[1-9]%d*(.*)$")
  if not rest or rest == "" then return false end
  local frac = rest:match("^%.%d+(.*)$")
  if frac then rest = frac end
  local exp = rest:match("^[eE][%+%-]?%d+$")
  if not (frac or exp) or (rest ~= "" and not exp) then return false end
  local v = tonumber(t)
  return v ~= nil and v == v and v ~= math.huge and v ~= -math.huge
end

-- The Lua value a number's text reads as: an integer when it is one that
-- fits, else the nearest float.
local function number_of(t)
  if int_text(t) then return math.tointeger(tonumber(t)) or tonumber(t) end
  return tonumber(t) + 0.0
end

-- A decimal number's text as a person may write a condition's constant
-- ([+-]digits[.digits][e[+-]digits], .5, 5., 007): its sign, its
-- significant digits and q (the value is 0.digits x 10^q); nil for none.
local function dec(t)
  local sign, mant, ex = t:match("^([%+%-]?)([%d%.]+)(.*)$")
  if not sign then return nil end
  local ip, fp = mant:match("^(%d*)%.(%d*)$")
  if not ip then
    if not mant:match("^%d+$") then return nil end
    ip, fp = mant, ""
  end
  if ip == "" and fp == "" then return nil end
  local e = 0
  if ex ~= "" then
    local x = ex:match("^[eE]([%+%-]?%d+)$")
    if not x then return nil end
    e = math.tointeger(tonumber(x))
  end
  local digits = ip .. fp
  local lead = #digits:match("^0*")
  local sig = digits:sub(lead + 1):gsub("0+$", "")
  if sig == "" then return { sign = 0 } end
  return { sign = sign == "-" and -1 or 1, sig = sig, q = #ip - lead + e }
end

local function dec_cmp(a, b)
  if a.sign ~= b.sign then return a.sign < b.sign and -1 or 1 end
  if a.sign == 0 then return 0 end
  local m
  if a.q ~= b.q then
    m = a.q < b.q and -1 or 1
  elseif a.sig == b.sig then
    m = 0
  else
    m = a.sig < b.sig and -1 or 1 -- (trailing zeros stripped: prefix order is value order)
  end
  return a.sign < 0 and -m or m
end

-- Whether a value written as `text` (nil: absent) meets `op v`: numbers
-- (by the rule of values) compare as decimals, exactly; = also when the
-- texts are the same; != is the rest, absent values included.
local function meets(text, op, v)
  if text == nil then return op == "!=" end
  local a = (int_text(text) or float_text(text)) and dec(text)
  local b = dec(v)
  local c = a and b and dec_cmp(a, b)
  if op == "=" then return c == 0 or text == v end
  if op == "!=" then return not (c == 0 or text == v) end
  if not c then return false end
  if op == "<" then return c < 0 elseif op == "<=" then return c <= 0
  elseif op == ">" then return c > 0 else return c >= 0 end
end

local function same(a, b)
  return math.type(a) == math.type(b) and type(a) == type(b) and a == b
end

-- The args of each dispatch slice of a trace, by seq: { [seq] = { [key] =
-- the value's JSON text } }, read from the text itself (a JSON reader
-- would turn integers past 2^53 into floats).
local function args_of(args)
    local t, pos = {}, 2
    while pos < #args do
      local k, after = args:match('^"([^"]*)":()', pos)
      assert(k, "args: " .. args)
      local v, nxt
      if args:sub(after, after) == '"' then
        v, nxt = args:match('^("[^"]*")()', after)
      else
        v, nxt = args:match("^([^,}]+)()", after)
      end
      t[k] = v
      pos = nxt + 1
    end
    return t
end

-- (each dispatch's args, with its phase and nested slices' args under
-- .slices[name])
local function trace_args(doc)
  local out, cur = {}, nil
  for line in doc:gmatch("[^\n]+") do
    local args, cat, name = line:match('^,?{"args":(%b{}),"cat":"(%w+)",.-"name":"([^"]*)"')
    if cat == "host" then
      cur = args_of(args)
      cur.slices = {}
      out[math.tointeger(tonumber(cur.seq))] = cur
    elseif (cat == "phase" or cat == "nested") and cur then
      cur.slices[name] = args_of(args)
    end
  end
  return out
end

-- Whether the JSON text j of a trace arg is the value whose line text is
-- `text`: a string as a string, an integer by its digits (past 2^63-1 as a
-- string of them), a float as the same number.
local function arg_is(j, text, stringy)
  if stringy then return j == '"' .. text .. '"' end
  if int_text(text) then
    local v = math.tointeger(tonumber(text))
    if v then return j == text end
    return j == '"' .. text .. '"'
  end
  return tonumber(j) == number_of(text)
end

local function check_cell(r, name, text, stringy, where)
  local v = r[name]
  if text == nil then
    assert.is_nil(v, where)
    return
  end
  local want = stringy and text or number_of(text)
  assert.is_true(same(want, v), ("%s: %s is %s (%s), expected %s (%s)"):format(where, name,
    tostring(v), math.type(v) or type(v), tostring(want), math.type(want) or type(want)))
  assert.are.equal(text, r:_text(name), where .. ": text of " .. name)
end

describe("values", function()
  it("keep u64 values above 2^63-1 exactly beside negative ones (float in Lua, text exact)", function()
    local set = set_of({ "rec seq=1 mix=18446744073709551615 n=1", "rec seq=2 mix=-1 n=2",
      "rec seq=3 mix=9223372036854775808 n=3" })
    local vs = set:values("mix")
    assert.are.equal("float", math.type(vs[1]))
    assert.are.equal(18446744073709551615.0, vs[1])
    assert.is_true(same(-1, vs[2]))
    assert.are.same({ "18446744073709551615", "-1", "9223372036854775808" }, set:values("mix", "text"))
    assert.are.equal("rec seq=1 mix=18446744073709551615 n=1", tostring(set[1]))
    assert.are.equal("rec seq=2 mix=-1 n=2", set._cols:line(2))
    assert.are.equal("18446744073709551615", set[1]:_text("mix"))
    assert.are.equal(1, #set:where { mix = -1 })
  end)

  it("keep an integer beside a float an integer, and a float's text as written", function()
    local set = set_of({ "rec fi=9007199254740993", "rec fi=1.5", "rec fi=1.50", "rec fi=3.0",
      "rec fi=1e3" })
    local vs = set:values("fi")
    assert.is_true(same(9007199254740993, vs[1]))
    assert.is_true(same(1.5, vs[2]))
    assert.is_true(same(1.5, vs[3]))
    assert.is_true(same(3.0, vs[4]))
    assert.is_true(same(1000.0, vs[5]))
    assert.are.same({ "9007199254740993", "1.5", "1.50", "3.0", "1e3" }, set:values("fi", "text"))
    assert.are.equal("rec fi=9007199254740993", tostring(set[1]))
    assert.are.equal("rec fi=1.50", set._cols:line(3))
  end)

  it("keep text that is not written as a number a string: 007, +5, -0, 0x10, 2^64", function()
    local set = set_of({ "rec s=007 t=+5 u=-0 v=0x10 w=18446744073709551616 x=.5 y=5.",
      "rec s=12 t=6 u=0 v=16 w=1 x=1 y=1" })
    for _, f in ipairs({ "s", "t", "u", "v", "w", "x", "y" }) do
      assert.are.equal("string", type(set[1][f]), f)
      assert.are.equal("string", type(set[2][f]), f)
    end
    assert.are.same({ "007", "12" }, set:values("s"))
    assert.are.same({ "+5", "6" }, set:values("t"))
    assert.are.equal("rec s=007 t=+5 u=-0 v=0x10 w=18446744073709551616 x=.5 y=5.", tostring(set[1]))
    -- a string column keeps every value's text, numbers that came first included
    local mixed = set_of({ "rec k=1.50", "rec k=18446744073709551615", "rec k=-1", "rec k=abc" })
    assert.are.same({ "1.50", "18446744073709551615", "-1", "abc" }, mixed:values("k"))
  end)

  it("are selected by --where exactly over the u64 range and across integers and floats", function()
    local run = require("helpers.command").run
    local log = os.tmpname()
    local f = assert(io.open(log, "w"))
    f:write("r seq=1 n=0 m=1.5\nr seq=2 n=1 m=2\nr seq=3 n=9223372036854775807 m=-1\n",
      "r seq=4 n=9223372036854775808 m=9007199254740993\nr seq=5 n=18446744073709551614 m=0.1\n",
      "r seq=6 n=18446744073709551615 m=9007199254740992\n")
    f:close()
    local function seqs(...)
      local rc, out, err = run("export", "--csv", "--where", ..., log)
      if rc ~= 0 then return err end
      local got = {}
      for l in out:gmatch("\n(%d+),") do got[#got + 1] = tonumber(l) end
      return table.concat(got, " ")
    end
    -- each condition and the seqs it keeps (none: the command says so)
    for _, c in ipairs {
      { "n>9223372036854775807", "4 5 6" },
      { "n=18446744073709551614", "5" },
      { "n=18446744073709551615", "6" },
      { "n<9223372036854775807", "1 2" },
      { "n<=9223372036854775807", "1 2 3" },
      { "n!=18446744073709551615", "1 2 3 4 5" },
      { "n>=18446744073709551615", "6" },
      { "n>=-1", "1 2 3 4 5 6" },
      { "n>0.5", "2 3 4 5 6" },
      -- past every value: nothing, not a wrapped bound
      { "n>18446744073709551615" },
      { "n<0" },
      { "n>1e30" },
      -- integers beside floats: 9007199254740993 is not 9007199254740992
      { "m=9007199254740993", "4" },
      { "m=9007199254740992", "6" },
      { "m>9007199254740992", "4" },
      { "m<2", "1 3 5" },
      { "m=0.10", "5" },
      { "m>=1.5", "1 2 4 6" },
    } do
      local cond, want = c[1], c[2]
      if want then
        assert.are.equal(want, seqs(cond), cond)
      else
        assert.matches("no records left after --where " .. cond, seqs(cond), 1, true)
      end
    end
    -- from Lua the same: conditions as text, ranges with integer bounds
    local set = records.read(log)
    assert.are.equal(3, set:where("n>9223372036854775807"):count())
    assert.are.equal(4, set:range("n", math.maxinteger):count())
    assert.are.equal(3, set:range("n", nil, math.maxinteger):count())
    assert.are.equal(3, set:range("n", 2.0 ^ 63):count()) -- a float bound, by its exact value
    assert.are.equal(0, set:range("n", 2.0 ^ 64):count()) -- no u64 reaches 2^64
    assert.are.equal(1, set:range("m", 9007199254740993, 9007199254740993):count())
    os.remove(log)
  end)

  it("come back the same from CSV and JSON lines, over random columns of every mix of kinds", function()
    local rand = require("helpers.lcg").new(20261201)
    local function pick(list) return list[rand(#list) + 1] end
    local function digits(n)
      local t = {}
      for i = 1, n do t[i] = tostring(rand(10)) end
      return table.concat(t)
    end
    local gen = {
      small = function() return tostring(rand(1000000)) end,
      big = function() return pick({ "9223372036854775808", "18446744073709551615",
        "12345678901234567890", "9" .. digits(18) }) end,
      neg = function() return pick({ "-" .. (rand(1000000000) + 1), "-9223372036854775808", "-1" }) end,
      edge = function() return pick({ "9223372036854775807", "-9223372036854775807",
        "9007199254740993", "9007199254740992", "0" }) end,
      float = function() return pick({ "1.5", "0.1", "3.0", "1e+20", "2.5e-07", "-0.0", "1e300",
        "5e-324", "123456.789", rand(1000) .. "." .. digits(3), "-" .. rand(99) .. ".25" }) end,
      floattext = function() return pick({ "1.50", "1e3", "0.10", "2.000", "1E5", "-1.0e-3",
        "9007199254740993.0", "18446744073709551616.5", "1e-400" }) end,
      word = function() return pick({ "abc", "x-y", "cjk", "q_1", "Latin1" }) end,
      numberish = function() return pick({ "007", "+5", "-0", "0x10", "18446744073709551616",
        "-9223372036854775809", "inf", "nan", "1.2.3", ".5", "5.", "00.5", "+1.5", "1e", "--1" }) end,
    }
    gen.duration = function() return pick({ tostring(rand(1000000)), "0", "9223372036854775807",
      "9223372036854775808", "18446744073709551615", "10" .. digits(18) }) end
    local kinds = { "small", "big", "neg", "edge", "float", "floattext", "word", "numberish" }
    -- the constants of conditions at the edges of the ranges
    local BOUNDS = { "9223372036854775807", "9223372036854775808", "18446744073709551614",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808",
      "-9223372036854775809", "0", "-0", "0.5", "1e19", "9007199254740993", "9007199254740992.5",
      "1.5", "+5", "007", "1.50", "1e-400", "-1", "99999999999999999999999" }
    local INT_BOUNDS = { math.mininteger, -1, 0, 1, 1000, 9007199254740993, math.maxinteger }
    local tmp = os.tmpname()
    for round = 1, 100 do
      local ncol = rand(6) + 3
      local cols = {}
      for c = 1, ncol do
        local mix, nk = {}, rand(3) + 1
        for _ = 1, nk do mix[#mix + 1] = pick(kinds) end
        cols[c] = { name = "c" .. c, mix = mix }
      end
      -- phases and a nested region, whose slices carry their values too
      if round % 2 == 0 then
        for _, name in ipairs { "prepare_ns", "ptx_ns", "sub_ptx_digest_ns" } do
          cols[#cols + 1] = { name = name, mix = { "duration" }, slice = name:gsub("_ns$", "") }
        end
      end
      local nrec = rand(12) + 2
      local cells, lines = {}, {}
      for i = 1, nrec do
        cells[i] = {}
        local parts = { "rec", "seq=" .. i }
        for _, col in ipairs(cols) do
          if rand(100) < 85 then
            local t = gen[pick(col.mix)]()
            cells[i][col.name] = t
            parts[#parts + 1] = col.name .. "=" .. t
          end
        end
        lines[i] = table.concat(parts, " ")
      end
      -- a column holding any text that is no number is a string column
      for _, col in ipairs(cols) do
        for i = 1, nrec do
          local t = cells[i][col.name]
          if t and not (int_text(t) or float_text(t)) then col.stringy = true end
        end
      end
      local set = set_of(lines)
      assert.are.equal(nrec, #set, "round " .. round)
      local function check(s, how)
        assert.are.equal(nrec, #s, how)
        for i = 1, nrec do
          local r = s[i]
          for _, col in ipairs(cols) do
            check_cell(r, col.name, cells[i][col.name], col.stringy,
              ("round %d, %s, record %d (%s)"):format(round, how, i, lines[i]))
          end
        end
      end
      check(set, "line")
      for i = 1, nrec do assert.are.equal(lines[i], tostring(set[i])) end
      -- conditions (set:where and --where) over every column, exactly: the
      -- constant a value of the column, a boundary or any number's text
      local conds = {}
      for _, col in ipairs(cols) do
        local present = false
        for i = 1, nrec do if cells[i][col.name] then present = true end end
        -- (a field no record has is an error, not an empty set)
        if not present then
          assert.has_error(function() set:where(col.name .. "=1") end)
        end
        for _ = 1, present and 4 or 0 do
          local op = pick({ "=", "!=", "<", "<=", ">", ">=" })
          local v
          local r = rand(3)
          if r == 0 then
            v = cells[rand(nrec) + 1][col.name] or "0"
          elseif r == 1 then
            v = pick(BOUNDS)
          else
            v = gen[pick(kinds)]()
          end
          if op ~= "=" and op ~= "!=" and not dec(v) then v = pick(BOUNDS) end
          conds[#conds + 1] = { col = col.name, op = op, v = v }
        end
      end
      local function check_where(s, how)
        for _, c in ipairs(conds) do
          local spec = c.col .. c.op .. c.v
          local want = {}
          for i = 1, nrec do
            if meets(cells[i][c.col], c.op, c.v) then want[#want + 1] = i end
          end
          local got = {}
          for _, r in s:where(spec):each() do got[#got + 1] = math.tointeger(r.seq) end
          assert.are.same(want, got, ("round %d, %s: where %s"):format(round, how, spec))
          got = {}
          for _, r in inputs.where(s, spec):each() do got[#got + 1] = math.tointeger(r.seq) end
          assert.are.same(want, got, ("round %d, %s: --where %s"):format(round, how, spec))
        end
        -- and a range with integer bounds: numbers only (a column that holds
        -- a string has none), integers by their digits, floats by value
        local col = pick(cols)
        if not s:has(col.name) then return end
        local lo, hi = pick(INT_BOUNDS), pick(INT_BOUNDS)
        local want = {}
        for i = 1, nrec do
          local t = cells[i][col.name]
          if t and not col.stringy and (int_text(t) or float_text(t)) then
            local ok
            if int_text(t) then
              local d = dec(t)
              ok = dec_cmp(d, dec(("%d"):format(lo))) >= 0 and dec_cmp(d, dec(("%d"):format(hi))) <= 0
            else
              local x = tonumber(t)
              ok = x >= lo and x <= hi
            end
            if ok then want[#want + 1] = i end
          end
        end
        local got = {}
        for _, r in s:range(col.name, lo, hi):each() do got[#got + 1] = math.tointeger(r.seq) end
        assert.are.same(want, got, ("round %d, %s: range %s [%d, %d]"):format(round, how, col.name, lo, hi))
      end
      check_where(set, "line")
      -- the trace's args: every field of every record, exactly
      local args = trace_args(export.trace_text({ { name = "r", set = set } }, { all = true }))
      for i = 1, nrec do
        for _, col in ipairs(cols) do
          local text, j = cells[i][col.name], args[i] and args[i][col.name]
          local where = ("round %d, trace, record %d, %s"):format(round, i, col.name)
          if text == nil then
            assert.is_nil(j, where)
          else
            assert.is_true(j ~= nil and arg_is(j, text, col.stringy), ("%s: %s in the trace, %s in "
              .. "the line"):format(where, tostring(j), text))
          end
          -- a phase's slice, or a region's inside it, when it is drawn
          local sl = col.slice and args[i].slices[col.slice]
          if sl then
            assert.is_true(arg_is(sl[col.name], text, false), ("%s: %s in its slice, %s in the "
              .. "line"):format(where, tostring(sl[col.name]), text))
          end
        end
      end
      for _, fmt in ipairs({ "csv", "jsonl" }) do
        assert(export[fmt](set, tmp))
        local back, err = export["read_" .. fmt](tmp, { prefix = "rec" })
        assert(back, err)
        check(back, fmt)
        check_where(back, fmt)
        if fmt == "jsonl" then -- (CSV has one column order for all records)
          for i = 1, nrec do assert.are.equal(lines[i], tostring(back[i]), fmt) end
        end
      end
    end
    os.remove(tmp)
  end)
end)
