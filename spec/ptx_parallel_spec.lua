-- pp.ptx.scan with the scan on a second thread (pp.ptx.parallel_min): the
-- tables are made from the entries as the scan finishes them, and the
-- result must be the one a single thread gives.
local pp = require "phaseprobe"
local oracle = require "helpers.ptx_oracle"
local vyre = require "helpers.vyre_ptx"
local KERNELS, FIXTURES, MARKER = oracle.KERNELS, oracle.FIXTURES, oracle.MARKER

-- fn() with pp.ptx.parallel_min set to v, restored after (errors included).
local function with(v, fn, ...)
  local saved = pp.ptx.parallel_min
  pp.ptx.parallel_min = v
  local ok, a, b = pcall(fn, ...)
  pp.ptx.parallel_min = saved
  if not ok then error(a, 0) end
  return a, b
end

local function both(text, opts)
  local one = with(false, pp.ptx.scan, text, opts)
  local two = with(0, pp.ptx.scan, text, opts)
  return one, two
end

-- A module of about `bytes` bytes: nvcc's entries renamed per copy, a
-- reference-shaped entry with three grid barriers per copy, a .func per
-- copy, an entry declared at the top and defined at the end (it holds back
-- the entries after it until the scan ends), and module-scope globals.
local function big_module(bytes)
  local pool = {}
  for _, f in ipairs({ "params", "shared", "gridsync" }) do
    local text = oracle.read(KERNELS .. f .. ".ptx")
    for whole, name in text:gmatch("(%.visible%s+%.entry%s+([%w_]+)%b()[^{]*%b{})") do
      if name ~= "no_params" then pool[#pool + 1] = { name = name, text = whole } end
    end
  end
  local parts = {
    vyre.header,
    ".global .align 4 .u32 _vyre_grid_barrier[1];\n",
    ".visible .entry late_one(.param .u64 late_one_p);\n",
    ".const .align 4 .b8 coeffs[64];\n",
  }
  local size, copy, expect = 0, 0, { "late_one" }
  while size < bytes do
    copy = copy + 1
    for _, e in ipairs(pool) do
      local t = e.text:gsub(e.name, e.name .. "_" .. copy) .. "\n"
      parts[#parts + 1] = t
      expect[#expect + 1] = e.name .. "_" .. copy
      size = size + #t
    end
    parts[#parts + 1] = ".func (.reg .b32 r) helper_" .. copy .. "(.reg .b32 a)\n{\n\tmov.b32 r, a;\n\tret;\n}\n"
    parts[#parts + 1] = vyre.entry { barriers = 3, name = "main_" .. copy } .. "\n"
    expect[#expect + 1] = "main_" .. copy
    size = size + #parts[#parts]
  end
  parts[#parts + 1] = ".visible .entry late_one(.param .u64 late_one_p, .param .u32 n)\n{\n\tret;\n}\n"
  return table.concat(parts), copy, expect
end

describe("pp.ptx.parallel_min", function()
  it("is a byte count by default, and takes false or another count", function()
    assert.are.equal(256 * 1024, pp.ptx.parallel_min)
    assert.is_true(math.type(pp.ptx.parallel_min) == "integer")
    local text = oracle.read(KERNELS .. "params.ptx")
    local want = with(false, pp.ptx.scan, text)
    assert.are.equal(2, #want.entries)
    for _, v in ipairs({ 0, 1, #text, 1 << 40 }) do
      assert.are.same(want, with(v, pp.ptx.scan, text), tostring(v))
    end
  end)

  it("rejects anything else, naming what it got", function()
    for v, what in pairs({ [true] = "boolean", x = "string", [1.5] = "number", [-1] = "number" }) do
      assert.has_error(function() with(v, pp.ptx.scan, "") end,
        "pp.ptx.parallel_min must be a byte count or false, not " .. what)
    end
    assert.are.equal(256 * 1024, pp.ptx.parallel_min)
  end)
end)

describe("pp.ptx.scan on a second thread", function()
  it("gives what one thread gives on every kernel and fixture, options included", function()
    local files = {}
    for _, f in ipairs({ "params", "shared", "gridsync", "saxpy", "coopsum", "spin", "trap" }) do
      files[#files + 1] = KERNELS .. f .. ".ptx"
    end
    for _, f in ipairs({ "binary", "comments_strings", "nul", "truncated", "unterminated_comment", "vyre_grid3" }) do
      files[#files + 1] = FIXTURES .. f .. ".ptx"
    end
    local opts = { markers = { MARKER, "bar.sync", "{" }, counter_global = "coeffs", max_line = 40 }
    for _, f in ipairs(files) do
      local text = oracle.read(f)
      local one, two = both(text)
      assert.are.same(one, two, f)
      one, two = both(text, opts)
      assert.are.same(one, two, f .. " with options")
    end
  end)

  it("gives what one thread gives on a large module, entries in text order", function()
    local text, copies, expect = big_module(600 * 1024)
    assert.is_true(#text >= pp.ptx.parallel_min)
    local one, two = both(text)
    assert.are.same(one, two)
    local got = {}
    for i, e in ipairs(two.entries) do got[i] = e.name end
    assert.are.same(expect, got)
    assert.are.equal(copies, #two.funcs)
    assert.are.equal(3 * copies, two.markers[MARKER])
    for _, e in ipairs(two.entries) do
      if e.name:match("^main_") then
        assert.are.equal(3, e.barrier_markers, e.name)
        assert.is_true(e.grid_sync, e.name)
      end
    end
    local late = two.entries[1]
    assert.is_true(late.defined)
    assert.are.same({ "late_one_p", "n" }, { late.params[1].name, late.params[2].name })
    assert.is_false(two.partial)
  end)

  it("gives what one thread gives when the scan stops part way", function()
    local text = big_module(300 * 1024)
    local cut = text:sub(1, #text // 2) .. "\0" .. text:sub(#text // 2 + 1)
    local one, two = both(cut)
    assert.are.same(one, two)
    assert.is_true(two.partial)
    assert.are.equal("NUL byte", two.errors[1].what)
  end)

  it("keeps its text and leaves nothing behind over many scans", function()
    local text = big_module(300 * 1024)
    local first = with(0, pp.ptx.scan, text)
    for _ = 1, 20 do
      local r = with(0, pp.ptx.scan, text .. "")
      assert.are.equal(#first.entries, #r.entries)
      collectgarbage()
    end
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
    local r = with(0, pp.ptx.scan_file, path)
    os.remove(path)
    assert.are.equal(path, r.path)
    r.path = nil
    assert.are.same(first, r)
  end)
end)
