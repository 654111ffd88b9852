-- tools/ptx_nibbles.lua: builds the nibble tables WLO and WHI with which the
-- PTX scanner's fast line reader (csrc/ptx/ptx_lines.c) tells word bytes
-- ([0-9A-Za-z_$%.], class C_WORD of csrc/ptx/ptx_lex.c) from the others, 32
-- bytes at a time, and checks them on all 256 bytes.
--
--   lua5.4 tools/ptx_nibbles.lua      prints the two #define lines
--
-- A vector shuffle looks a byte's low nibble up in one 16-entry table and
-- its high nibble in another; the byte is a word byte when the two entries
-- share a bit. The tables come from the ASCII table read as 16 rows (high
-- nibble) of 16 columns (low nibble):
--
--   * each row h has a set S(h) of columns that hold word bytes (row 3:
--     columns 0-9, the digits; row 4: columns 1-F, A-O; ...);
--   * each distinct non-empty set gets one bit (rows 4 and 6, A-O and a-o,
--     share theirs);
--   * WHI[h] is the bit of S(h) (0 when the row has no word byte);
--   * WLO[l] holds the bit of every set that contains column l.
--
-- Then WLO[l] & WHI[h] ~= 0 exactly when l is in S(h), that is when the
-- byte 16h + l is a word byte. There are five distinct sets, within the 8
-- bits a byte holds. spec/ptx_nibbles_spec.lua checks that ptx_lines.c
-- carries what this prints.
local M = {}

-- The word bytes, as the byte class table of ptx_lex.c has them.
function M.is_word(b)
  local c = string.char(b)
  return c:match("[%w_%$%%%.]") ~= nil and b < 128
end

-- The two tables, as arrays indexed 0..15.
function M.build(is_word)
  is_word = is_word or M.is_word
  local wlo, whi = {}, {}
  for i = 0, 15 do wlo[i], whi[i] = 0, 0 end
  local bit_of, nbits = {}, 0
  for h = 0, 15 do
    local cols, key = {}, {}
    for l = 0, 15 do
      if is_word(h * 16 + l) then
        cols[#cols + 1] = l
        key[#key + 1] = string.format("%x", l)
      end
    end
    if #cols > 0 then
      local k = table.concat(key)
      if not bit_of[k] then
        assert(nbits < 8, "more than 8 distinct rows: no byte table holds them")
        bit_of[k] = 1 << nbits
        nbits = nbits + 1
        for _, l in ipairs(cols) do wlo[l] = wlo[l] | bit_of[k] end
      end
      whi[h] = bit_of[k]
    end
  end
  return wlo, whi
end

-- Whether the tables classify every byte as is_word does; on a mismatch,
-- false and the first byte that differs.
function M.check(wlo, whi, is_word)
  is_word = is_word or M.is_word
  for b = 0, 255 do
    local word = (wlo[b & 15] & whi[b >> 4]) ~= 0
    if word ~= is_word(b) then return false, b end
  end
  return true
end

function M.defines(wlo, whi)
  local function row(t)
    local out = {}
    for i = 0, 15 do out[#out + 1] = tostring(t[i]) end
    return table.concat(out, ", ")
  end
  return ("#define WLO %s\n#define WHI %s\n"):format(row(wlo), row(whi))
end

if not pcall(debug.getlocal, 4, 1) then -- run as a script
  local wlo, whi = M.build()
  local ok, b = M.check(wlo, whi)
  if not ok then
    io.stderr:write(("byte 0x%02x misclassified\n"):format(b))
    os.exit(1)
  end
  io.write(M.defines(wlo, whi))
end

return M
