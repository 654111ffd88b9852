-- pp.text.format (csrc/lua/lua_text.c): the part of string.format that the
-- trace export's templates use (%d, %0Nd, %s, %%), built in C. It must give
-- string.format's bytes for every value it takes, and refuse the rest.
local pp = require "phaseprobe"
local F = pp.text.format

describe("pp.text.format", function()
  it("gives string.format's text for random templates and values", function()
    local rng = math.random
    math.randomseed(tonumber(os.getenv("PHASEPROBE_TEXT_SEED") or "") or os.time())
    local ints = { 0, 1, -1, 9, 10, 99, 100, 999, 1000, math.maxinteger, math.mininteger,
      math.maxinteger - 1, math.mininteger + 1, 123456789012345, -987654321, 3.0, -0.0, 2^53 }
    local strs = { "", "x", "a b", "%d", "\0nul", "日本", 1.5, -2, 1e300 }
    for _ = 1, 2000 do
      local parts, args = {}, {}
      for _ = 1, rng(0, 8) do
        local pick = rng(5)
        if pick == 1 then
          parts[#parts + 1] = "%d"; args[#args + 1] = ints[rng(#ints)]
        elseif pick == 2 then
          local w = rng(1, 9)
          parts[#parts + 1] = "%0" .. w .. "d"
          args[#args + 1] = rng(2) == 1 and ints[rng(#ints)] or rng(-10^w, 10^w)
        elseif pick == 3 then
          parts[#parts + 1] = "%s"; args[#args + 1] = strs[rng(#strs)]
        elseif pick == 4 then
          parts[#parts + 1] = "%%"
        else
          parts[#parts + 1] = ({ "{", '"ts":', ".", ",\n", "abc", "" })[rng(6)]
        end
      end
      local t = table.concat(parts)
      local want = string.format(t, table.unpack(args, 1, #args))
      assert.are.equal(want, F(t, table.unpack(args, 1, #args)), ("template %q"):format(t))
    end
  end)

  it("refuses what it does not format, naming the argument or the template's byte", function()
    local cases = {
      { "number has no integer representation", "%d", 3.5 },
      { "number expected, got string", "%d", "seven" },
      { "number expected, got nil", "x%d", nil },
      { "no value", "%d%d", 1 },
      { "'%x' at byte 3", "ab%x", 1 },
      { "'%5' at byte 1", "%5d", 1 },
      { "only %d may be zero-padded", "%05s", "a" },
      { "at byte 2", "a%", 1 },
      { "string expected, got table", "%s", {} },
      { "string expected, got boolean", "%s", true },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(F, c[2], c[3])
      assert.is_false(ok, c[2])
      assert.truthy(tostring(err):find(c[1], 1, true), c[2] .. ": " .. tostring(err))
    end
    -- what string.format takes for an integer, it takes too
    assert.are.equal("7 8", F("%d %d", "7", " 8 "))
    assert.is_false(pcall(F))
    assert.is_false(pcall(F, {}))
  end)
end)
