-- A small PNG reader for the render specs: enough to tell a rendered page from
-- a blank one without anything but Lua. It inflates the zlib stream (stored,
-- fixed and dynamic Huffman blocks), undoes the scanline filters of 8-bit RGB
-- and RGBA images, and counts colours as the rows come out, so the whole
-- image never sits in memory.
local M = {}

local function bits(data, pos)
  local buf, cnt = 0, 0
  local r = {}
  function r.get(n)
    while cnt < n do
      local b = data:byte(pos)
      if not b then error("png: compressed data ends early", 0) end
      buf = buf | (b << cnt)
      pos = pos + 1
      cnt = cnt + 8
    end
    local v = buf & ((1 << n) - 1)
    buf = buf >> n
    cnt = cnt - n
    return v
  end
  function r.align()
    buf, cnt = 0, 0
  end
  function r.byte_pos() return pos end
  function r.set_pos(p) pos = p end
  return r
end

-- Canonical Huffman code from code lengths: counts per length and symbols in
-- code order.
local function huffman(lengths, n)
  local count, offs, symbol = {}, {}, {}
  for l = 0, 15 do count[l] = 0 end
  for s = 0, n - 1 do count[lengths[s] or 0] = count[lengths[s] or 0] + 1 end
  offs[1] = 0
  for l = 1, 14 do offs[l + 1] = offs[l] + count[l] end
  for s = 0, n - 1 do
    local l = lengths[s] or 0
    if l ~= 0 then
      symbol[offs[l]] = s
      offs[l] = offs[l] + 1
    end
  end
  return { count = count, symbol = symbol }
end

local function decode(br, h)
  local code, first, index = 0, 0, 0
  for len = 1, 15 do
    code = code | br.get(1)
    local count = h.count[len]
    if code - count < first then return h.symbol[index + (code - first)] end
    index = index + count
    first = (first + count) << 1
    code = code << 1
  end
  error("png: bad Huffman code", 0)
end

local LBASE = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
  131, 163, 195, 227, 258 }
local LEXT = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 }
local DBASE = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
  2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577 }
local DEXT = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 }
local CLORDER = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 }

local fixed_lit, fixed_dist
local function fixed_tables()
  if not fixed_lit then
    local l = {}
    for s = 0, 143 do l[s] = 8 end
    for s = 144, 255 do l[s] = 9 end
    for s = 256, 279 do l[s] = 7 end
    for s = 280, 287 do l[s] = 8 end
    fixed_lit = huffman(l, 288)
    local d = {}
    for s = 0, 29 do d[s] = 5 end
    fixed_dist = huffman(d, 30)
  end
  return fixed_lit, fixed_dist
end

local function dynamic_tables(br)
  local nlen, ndist, ncode = br.get(5) + 257, br.get(5) + 1, br.get(4) + 4
  local cl = {}
  for i = 1, ncode do cl[CLORDER[i]] = br.get(3) end
  local clh = huffman(cl, 19)
  local lengths, i = {}, 0
  while i < nlen + ndist do
    local sym = decode(br, clh)
    if sym < 16 then
      lengths[i] = sym
      i = i + 1
    else
      local rep, val = 0, 0
      if sym == 16 then
        if i == 0 then error("png: repeat with no previous length", 0) end
        val = lengths[i - 1]
        rep = 3 + br.get(2)
      elseif sym == 17 then
        rep = 3 + br.get(3)
      else
        rep = 11 + br.get(7)
      end
      for _ = 1, rep do
        lengths[i] = val
        i = i + 1
      end
    end
  end
  local lit, dist = {}, {}
  for s = 0, nlen - 1 do lit[s] = lengths[s] end
  for s = 0, ndist - 1 do dist[s] = lengths[nlen + s] end
  return huffman(lit, nlen), huffman(dist, ndist)
end

-- Inflates a zlib stream, calling sink(byte) for every output byte.
local function inflate(data, sink)
  local br = bits(data, 3) -- past the two-byte zlib header
  local win, wpos = {}, 0
  local function put(b)
    win[wpos & 32767] = b
    wpos = wpos + 1
    sink(b)
  end
  repeat
    local final = br.get(1)
    local btype = br.get(2)
    if btype == 0 then
      br.align()
      local p = br.byte_pos()
      local len = string.unpack("<I2", data, p)
      p = p + 4
      for k = 0, len - 1 do put(data:byte(p + k)) end
      br.set_pos(p + len)
    elseif btype == 1 or btype == 2 then
      local lit, dist
      if btype == 1 then lit, dist = fixed_tables() else lit, dist = dynamic_tables(br) end
      while true do
        local sym = decode(br, lit)
        if sym < 256 then
          put(sym)
        elseif sym == 256 then
          break
        else
          sym = sym - 257
          local len = LBASE[sym + 1] + br.get(LEXT[sym + 1])
          local ds = decode(br, dist)
          local d = DBASE[ds + 1] + br.get(DEXT[ds + 1])
          if d > wpos then error("png: distance too far back", 0) end
          for _ = 1, len do put(win[(wpos - d) & 32767]) end
        end
      end
    else
      error("png: bad block type 3", 0)
    end
  until final == 1
end

-- Reads a PNG file: { width, height, colours = distinct RGB colours (counted
-- up to 65536), counts = {[rgb] = pixels}, background = most common colour,
-- off_background = fraction of pixels not the background colour }.
function M.read(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  if data:sub(1, 8) ~= "\137PNG\r\n\26\n" then error(path .. ": not a PNG file", 0) end
  local pos, idat, w, h, depth, ctype, interlace = 9, {}, nil, nil, nil, nil, nil
  while pos <= #data do
    local len, kind = string.unpack(">I4c4", data, pos)
    local body = data:sub(pos + 8, pos + 7 + len)
    if kind == "IHDR" then
      local _c, _f
      w, h, depth, ctype, _c, _f, interlace = string.unpack(">I4I4BBBBB", body)
    elseif kind == "IDAT" then
      idat[#idat + 1] = body
    elseif kind == "IEND" then
      break
    end
    pos = pos + 12 + len
  end
  if not w then error(path .. ": no IHDR", 0) end
  if depth ~= 8 or (ctype ~= 2 and ctype ~= 6) or interlace ~= 0 then
    error(("%s: only 8-bit RGB/RGBA, not interlaced (depth %d, colour type %d)"):format(path, depth, ctype), 0)
  end
  local bpp = ctype == 6 and 4 or 3
  local stride = w * bpp
  local prev, cur = {}, {}
  for i = 1, stride do prev[i] = 0 end
  local col, filter, rows = 0, 0, 0
  local counts, ncolours = {}, 0
  local function finish_row()
    for x = 0, w - 1 do
      local i = x * bpp
      local rgb = (cur[i + 1] << 16) | (cur[i + 2] << 8) | cur[i + 3]
      local c = counts[rgb]
      if c then
        counts[rgb] = c + 1
      elseif ncolours < 65536 then
        counts[rgb] = 1
        ncolours = ncolours + 1
      end
    end
    prev, cur = cur, prev
    rows = rows + 1
  end
  local function sink(b)
    if col == 0 then
      filter = b
      col = 1
      return
    end
    local i = col
    local a = i > bpp and cur[i - bpp] or 0
    local up = prev[i]
    local v
    if filter == 0 then
      v = b
    elseif filter == 1 then
      v = b + a
    elseif filter == 2 then
      v = b + up
    elseif filter == 3 then
      v = b + ((a + up) >> 1)
    elseif filter == 4 then
      local c = i > bpp and prev[i - bpp] or 0
      local p = a + up - c
      local pa, pb, pc = math.abs(p - a), math.abs(p - up), math.abs(p - c)
      v = b + ((pa <= pb and pa <= pc) and a or (pb <= pc and up or c))
    else
      error(path .. ": bad filter type " .. filter, 0)
    end
    cur[i] = v & 255
    if col == stride then
      col = 0
      finish_row()
    else
      col = col + 1
    end
  end
  inflate(table.concat(idat), sink)
  if rows ~= h then error(("%s: %d rows decoded, header says %d"):format(path, rows, h), 0) end
  local bg, bgn = nil, -1
  for rgb, n in pairs(counts) do
    if n > bgn then bg, bgn = rgb, n end
  end
  return { width = w, height = h, colours = ncolours, counts = counts, background = bg,
    off_background = 1 - bgn / (w * h) }
end

-- "#rrggbb" -> the integer key used in counts
function M.rgb(hex)
  return tonumber(hex:sub(2), 16)
end

return M
