-- The nibble tables of the PTX scanner's fast line reader
-- (csrc/ptx/ptx_lines.c) tell word bytes from the others; they are built by
-- tools/ptx_nibbles.lua, which states their derivation.
local nib = dofile("tools/ptx_nibbles.lua")

local function source_tables()
  local f = assert(io.open("csrc/ptx/ptx_lines.c", "rb"))
  local src = f:read("a")
  f:close()
  local function row(name)
    local line = src:match("\n#define " .. name .. " ([%d, ]+)\n")
    assert(line, name .. " not found in ptx_lines.c")
    local t, i = {}, 0
    for n in line:gmatch("%d+") do t[i] = tonumber(n); i = i + 1 end
    assert(i == 16, name .. " has " .. i .. " entries, not 16")
    return t
  end
  return row("WLO"), row("WHI"), src
end

describe("ptx nibble tables", function()
  it("classify every byte as the scanner's word class does", function()
    local wlo, whi = source_tables()
    local ok, b = nib.check(wlo, whi)
    assert.is_true(ok, b and ("byte 0x%02x misclassified"):format(b))
  end)

  it("are the ones tools/ptx_nibbles.lua builds", function()
    local _, _, src = source_tables()
    local want = nib.defines(nib.build())
    assert.truthy(src:find(want, 1, true), "ptx_lines.c does not carry:\n" .. want)
  end)

  it("a table that misses one byte is caught", function()
    local wlo, whi = nib.build()
    whi[5] = 0 -- row 5: P-Z and '_'
    local ok, b = nib.check(wlo, whi)
    assert.is_false(ok)
    assert.are.equal(0x50, b)
  end)

  it("the word class is [0-9A-Za-z_$%.] and nothing from 0x80 up", function()
    local n = 0
    for b = 0, 255 do if nib.is_word(b) then n = n + 1 end end
    assert.are.equal(10 + 26 + 26 + 4, n)
    for b = 128, 255 do assert.is_false(nib.is_word(b)) end
  end)
end)
