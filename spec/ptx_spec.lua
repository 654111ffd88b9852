-- pp.ptx: the PTX scanner, on nvcc's PTX (examples/kernels), on
-- reference-shaped programs and on malformed input.
local pp = require "phaseprobe"
local oracle = require "helpers.ptx_oracle"
local vyre = require "helpers.vyre_ptx"
local lcg = require("helpers.lcg").new
local KERNELS, FIXTURES, MARKER = oracle.KERNELS, oracle.FIXTURES, oracle.MARKER

local by_name = oracle.by_name

local function names(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e.name end
  return out
end

-- Holds every entry's instruction and register figures against the oracle.
local function check_against_oracle(text, r)
  local bodies, order = oracle.bodies(text)
  assert.are.same(order, names(r.entries))
  for _, e in ipairs(r.entries) do
    local body = bodies[e.name]
    assert.are.equal(oracle.instructions(body), e.instructions, e.name .. " instructions")
    assert.are.same(oracle.registers(body), e.registers, e.name .. " registers")
    assert.are.equal(oracle.count_ops(body, "^bar%.") + oracle.count_ops(body, "^barrier%."),
      e.bar_sync, e.name .. " bar_sync")
    assert.are.equal(oracle.count_ops(body, "^atom%..*global") + oracle.count_ops(body, "^red%..*global"),
      e.atomics_global, e.name .. " atomics_global")
  end
  assert.are.equal(oracle.lines(text), r.lines)
  assert.are.equal(#text, r.bytes)
end

describe("pp.ptx.scan on nvcc's PTX", function()
  it("reads the module header and every entry of each example kernel", function()
    local seen = 0
    for _, f in ipairs({ "params", "shared", "gridsync" }) do
      local text = oracle.read(KERNELS .. f .. ".ptx")
      local r = pp.ptx.scan(text)
      assert.is_false(r.partial, f .. ": " .. (r.errors[1] and r.errors[1].what or ""))
      assert.are.same({}, r.errors)
      assert.are.equal(text:match("%.version%s+([%d%.]+)"), r.version)
      assert.are.equal(text:match("%.target%s+([%w_]+)"), r.target)
      assert.are.equal(tonumber(text:match("%.address_size%s+(%d+)")), r.address_size)
      check_against_oracle(text, r)
      seen = seen + #r.entries
    end
    assert.are.equal(5, seen)
  end)

  it("lists parameters in order with C sizes, alignments and buffer offsets", function()
    local r = pp.ptx.scan_file(KERNELS .. "params.ptx")
    local e = by_name(r.entries).mixed_params
    -- float*, const int*, int, unsigned char, short, float, double, long long,
    -- Pair {float; double}, Window {int; float[5]}, uint16_t
    local want = {
      { size = 8, align = 8, offset = 0 }, { size = 8, align = 8, offset = 8 },
      { size = 4, align = 4, offset = 16 }, { size = 1, align = 1, offset = 20 },
      { size = 2, align = 2, offset = 22 }, { size = 4, align = 4, offset = 24 },
      { size = 8, align = 8, offset = 32 }, { size = 8, align = 8, offset = 40 },
      { size = 16, align = 8, offset = 48 }, { size = 24, align = 4, offset = 64 },
      { size = 2, align = 2, offset = 88 },
    }
    assert.are.equal(#want, #e.params)
    for i, w in ipairs(want) do
      local p = e.params[i]
      assert.are.equal("mixed_params_param_" .. (i - 1), p.name)
      assert.are.same(w, { size = p.size, align = p.align, offset = p.offset }, "param " .. i)
    end
    assert.are.equal(".b8", e.params[9].type)
    assert.are.equal(16, e.params[9].array)
    assert.are.equal(0, e.params[3].array)
    assert.are.same({}, by_name(r.entries).no_params.params)
    assert.is_true(e.visible)
    assert.are.same({ "_Z3mixi" }, r.funcs)
    assert.are.same({ name = "last_mix", space = "global", type = ".u32", size = 4, align = 4 },
      { name = r.globals[1].name, space = r.globals[1].space, type = r.globals[1].type,
        size = r.globals[1].size, align = r.globals[1].align })
    assert.are.equal(r.path, KERNELS .. "params.ptx")
  end)

  it("reports shared memory, launch bounds, barriers and atomics", function()
    local r = pp.ptx.scan_file(KERNELS .. "shared.ptx")
    local e = by_name(r.entries)
    assert.are.same({ 256, 1, 1 }, e.block_reduce.maxntid)
    assert.are.equal(2, e.block_reduce.minnctapersm)
    assert.is_nil(e.block_reduce.reqntid)
    assert.is_nil(e.block_histogram.maxntid)
    assert.are.equal(1024, e.block_reduce.shared_bytes)     -- float[256]
    assert.are.equal(256, e.block_histogram.shared_bytes)   -- unsigned[64]
    assert.are.equal("shared", e.block_reduce.vars[1].space)
    assert.are.equal(2, e.block_histogram.atomics)
    assert.are.equal(1, e.block_histogram.atomics_global)
    local g = by_name(r.globals)
    assert.are.same({ "const", 64 }, { g.coeffs.space, g.coeffs.size })         -- float[16]
    assert.are.same({ "global", 256 }, { g.histogram.space, g.histogram.size }) -- unsigned[64]
    assert.are.same({ "shared", 0, true }, { g.spill.space, g.spill.size, g.spill.extern })
    assert.is_false(r.grid_sync)
    assert.is_false(e.block_reduce.grid_sync)
  end)

  it("finds each cooperative-groups grid.sync() in nvcc's code", function()
    local r = pp.ptx.scan_file(KERNELS .. "gridsync.ptx")
    local src = oracle.read(KERNELS .. "gridsync.cu")
    local syncs = select(2, src:gsub("grid%.sync%(%)", ""))
    assert.are.equal(3, syncs)
    local e = r.entries[1]
    assert.are.equal(syncs, e.grid_syncs)
    assert.is_true(e.grid_sync)
    assert.is_true(r.grid_sync)
    assert.are.equal(0, r.markers[MARKER])
    assert.is_false(r.counter_global)
  end)
end)

describe("pp.ptx.scan on reference-shaped PTX", function()
  it("counts k barrier markers, k grid syncs and the counter global for k = 0..6", function()
    for k = 0, 6 do
      local text = vyre.program { barriers = k }
      local r = pp.ptx.scan(text)
      assert.is_false(r.partial)
      assert.are.equal(k, r.markers[MARKER])
      assert.are.equal(k, pp.ptx.count(text, MARKER))
      assert.are.equal(k > 0, r.counter_global)
      assert.are.equal(k > 0, r.grid_sync)
      local e = r.entries[1]
      assert.are.equal("main", e.name)
      assert.are.equal(k, e.grid_syncs)
      assert.are.equal(k, e.barrier_markers)
      assert.are.equal(2 * k, e.bar_sync)
      assert.are.equal(k, e.atomics_global)
      assert.are.equal(vyre.instructions(k), e.instructions)
      check_against_oracle(text, r)
    end
  end)

  it("reads the checked-in fixture like the generated text", function()
    local r = pp.ptx.scan_file(FIXTURES .. "vyre_grid3.ptx")
    assert.are.equal(3, r.markers[MARKER])
    assert.is_true(r.counter_global)
    assert.are.same({ name = "_vyre_grid_barrier", size = 4, array = 1, align = 4 },
      { name = r.globals[1].name, size = r.globals[1].size, array = r.globals[1].array,
        align = r.globals[1].align })
    assert.are.equal(pp.ptx.digest(vyre.program { barriers = 3 }), r.digest)
  end)

  it("attributes markers to the entry whose body holds them", function()
    local text = vyre.header .. ".global .align 4 .u32 _vyre_grid_barrier[1];\n"
      .. vyre.entry { barriers = 2, name = "first" } .. vyre.entry { barriers = 0, name = "second" }
      .. vyre.entry { barriers = 4, name = "third" }
    local e = by_name(pp.ptx.scan(text).entries)
    assert.are.same({ 2, 0, 4 }, { e.first.barrier_markers, e.second.barrier_markers, e.third.barrier_markers })
    assert.are.same({ 2, 0, 4 }, { e.first.grid_syncs, e.second.grid_syncs, e.third.grid_syncs })
    assert.is_false(e.second.grid_sync)
  end)

  it("takes configurable markers and counter name", function()
    local text = vyre.program { barriers = 2 }
    local r = pp.ptx.scan(text, { markers = { MARKER, "membar.gl", "no such text" },
                                  counter_global = "other_counter" })
    assert.are.same({ [MARKER] = 2, ["membar.gl"] = 4, ["no such text"] = 0 }, r.markers)
    assert.is_false(r.counter_global)
    assert.is_false(pp.ptx.scan(text, { counter_global = false }).counter_global)
    assert.is_true(pp.ptx.scan(text, { counter_global = "_vyre_grid_barrier" }).counter_global)
  end)
end)

describe("pp.ptx.summary", function()
  it("gives scan's module-level facts and the entry names, without entry tables", function()
    for _, f in ipairs({ KERNELS .. "shared.ptx", FIXTURES .. "vyre_grid3.ptx", FIXTURES .. "truncated.ptx" }) do
      local text = oracle.read(f)
      local full, sum = pp.ptx.scan(text), pp.ptx.summary(text)
      for _, k in ipairs({ "bytes", "lines", "version", "target", "address_size", "counter_global",
                           "grid_sync", "digest", "partial", "errors", "markers", "funcs" }) do
        assert.are.same(full[k], sum[k], f .. ": " .. k)
      end
      assert.are.same(names(full.entries), sum.entry_names)
      assert.is_nil(sum.entries)
      assert.is_nil(sum.globals)
    end
  end)
end)

describe("pp.ptx register declarations", function()
  it("are counted by class, in nvcc's form and the general one", function()
    local text = table.concat({
      ".version 8.0", ".target sm_90", ".address_size 64",
      ".entry k()", "{",
      "\t.reg .pred %p<2>;", "\t.reg .b8 a;", "\t.reg .u16 b, c;", "\t.reg .s64 %d<0x10>;",
      "\t.reg .bf16x2 e;", "\t.reg .f16 f;", "\t.reg .b128 g;", "\t.reg .v4 .f32 v;",
      "\t.reg .s32 %r<4>, %q;", "\t.reg .f64 %fd<007>;", "\t.reg .b32 /* a comment */ %x<3>;",
      "\t.reg .e4m3x2 z;",
      "\tret;", "}", "" }, "\n")
    local r = pp.ptx.scan(text)
    assert.are.same({}, r.errors)
    assert.are.same({ [".pred"] = 2, [".b8"] = 1, [".u16"] = 2, [".s64"] = 16, [".bf16x2"] = 1,
      [".f16"] = 1, [".b128"] = 1, [".f32"] = 4, [".s32"] = 5, [".f64"] = 7, [".b32"] = 3, other = 1 },
      r.entries[1].registers)
    assert.are.equal(1, r.entries[1].instructions)
  end)
end)

describe("pp.ptx comments and strings", function()
  it("never count instructions or directives inside them", function()
    local r = pp.ptx.scan_file(FIXTURES .. "comments_strings.ptx")
    assert.is_false(r.partial)
    assert.are.same({ "real" }, names(r.entries))
    local e = r.entries[1]
    assert.are.equal(3, e.instructions) -- bar.sync, mov.u32, ret
    assert.are.equal(1, e.bar_sync)
    assert.are.equal(0, e.atomics)
    assert.are.same({ [".b32"] = 3 }, e.registers)
    assert.are.equal(1, #e.params)
    assert.are.equal("sm_90", r.target)
    assert.is_false(r.counter_global)
    -- markers are text: the one in a comment counts, as the reference's do
    assert.are.equal(1, r.markers[MARKER])
  end)
end)

describe("pp.ptx.count", function()
  it("counts non-overlapping occurrences at every position and length", function()
    local naive = require("helpers.text").count
    assert.are.equal(2, pp.ptx.count("aaaaa", "aa"))
    local rand = lcg(12345)
    local alphabet = { "g", "r", "i", "d", ".", "s", "#", " ", "\n", "\0" }
    for _ = 1, 300 do
      local t = {}
      for i = 1, rand(200) do t[i] = alphabet[rand(#alphabet) + 1] end
      local s = table.concat(t)
      local m = {}
      for i = 1, rand(4) + 1 do m[i] = alphabet[rand(#alphabet) + 1] end
      m = table.concat(m)
      assert.are.equal(naive(s, m), pp.ptx.count(s, m), ("%q in %q"):format(m, s))
    end
    -- markers placed across every 32-byte boundary
    for pad = 0, 70 do
      local s = ("x"):rep(pad) .. MARKER .. ("y"):rep(70 - pad) .. MARKER
      assert.are.equal(2, pp.ptx.count(s, MARKER))
      assert.are.equal(1, pp.ptx.count(s:sub(1, -2), MARKER))
    end
  end)
end)

describe("pp.ptx.digest", function()
  it("is XXH3-64 (seed 0) as 16 hex digits, over the exact bytes", function()
    assert.are.equal("2d06800538d394c2", pp.ptx.digest("")) -- XXH3_64bits of no input
    assert.are.equal("78af5f94892f3950", pp.ptx.digest("abc"))
    local text = oracle.read(KERNELS .. "params.ptx")
    local d = pp.ptx.digest(text)
    assert.matches("^%x+$", d)
    assert.are.equal(16, #d)
    assert.are.equal(d, pp.ptx.scan(text).digest)
    assert.are_not.equal(d, pp.ptx.digest(text .. " "))
    assert.are_not.equal(d, pp.ptx.digest(text:sub(1, -2) .. "\0"))
  end)

  it("agrees with xxhsum -H3 where that tool is installed", function()
    local p = io.popen("command -v xxhsum")
    local have = p:read("a") ~= ""
    p:close()
    if not have then
      pending("xxhsum not installed (Debian package xxhash)")
      return
    end
    for _, f in ipairs({ KERNELS .. "params.ptx", FIXTURES .. "vyre_grid3.ptx" }) do
      local out = io.popen("xxhsum -H3 " .. f .. " 2>/dev/null"):read("a") -- no progress on the terminal
      assert.are.equal(out:match("= (%x+)") or out:match("^(%x+)"), pp.ptx.digest(oracle.read(f)))
    end
  end)
end)

describe("pp.ptx.scan on malformed input", function()
  local function check_invariants(text, r)
    assert.are.equal(#text, r.bytes)
    assert.are.equal(oracle.lines(text), r.lines)
    assert.are.equal(r.partial, #r.errors > 0)
    for _, e in ipairs(r.errors) do
      assert.is_true(e.line >= 1 and e.line <= r.lines + 1, e.what)
      assert.is_true(e.col >= 1, e.what)
      assert.is_true(e.offset >= 0 and e.offset <= #text, e.what)
    end
    for _, e in ipairs(r.entries) do
      assert.is_true(e.body_end <= #text)
    end
  end

  it("gives a flagged partial result for every truncation of real PTX", function()
    for _, f in ipairs({ KERNELS .. "params.ptx", FIXTURES .. "vyre_grid3.ptx" }) do
      local text = oracle.read(f)
      local full = pp.ptx.scan(text)
      for n = 0, #text do
        local cut = text:sub(1, n)
        local r = pp.ptx.scan(cut)
        check_invariants(cut, r)
        assert.is_true(#r.entries <= #full.entries)
        -- cut inside the last body: flagged, with where the text ended
        local last = full.entries[#full.entries]
        if n > last.body_begin and n < last.body_end - 1 then
          assert.is_true(r.partial, ("cut at %d"):format(n))
          local e = r.errors[#r.errors]
          local line = oracle.lines(cut .. "x")
          assert.are.equal(line, e.line, e.what)
        end
      end
      assert.is_false(pp.ptx.scan(text).partial)
    end
  end)

  it("reports a truncated body with the line and column where the text ends", function()
    local text = oracle.read(FIXTURES .. "truncated.ptx")
    local r = pp.ptx.scan(text)
    assert.is_true(r.partial)
    assert.are.equal(1, #r.errors)
    assert.matches("unexpected end of text in the body of entry 'cut' %(opened at line 8%)", r.errors[1].what)
    local line, col = oracle.position(text, #text + 1)
    assert.are.same({ line, col }, { r.errors[1].line, r.errors[1].col })
    assert.are.equal(2, r.entries[1].instructions)
    assert.are.equal(1, #r.entries[1].params)
  end)

  it("stops at a NUL or binary byte and says where", function()
    for file, what in pairs({ ["nul.ptx"] = "NUL byte", ["binary.ptx"] = "binary byte 0x01" }) do
      local text = oracle.read(FIXTURES .. file)
      local r = pp.ptx.scan(text)
      check_invariants(text, r)
      assert.is_true(r.partial)
      assert.are.equal(what, r.errors[1].what)
      local at = text:find(file == "nul.ptx" and "\0" or "\1", 1, true)
      local line, col = oracle.position(text, at)
      assert.are.same({ line, col, at - 1 }, { r.errors[1].line, r.errors[1].col, r.errors[1].offset })
    end
    local r = pp.ptx.scan("\127ELF\2\1\1\0\0\0")
    assert.is_true(r.partial)
    assert.are.same({ "binary byte 0x7f", 1, 1 }, { r.errors[1].what, r.errors[1].line, r.errors[1].col })
    r = pp.ptx.scan(".version 8.0\n.entry k() { mov.u32 %r1, 1; \xc3\xa9 }")
    assert.matches("non%-ASCII byte 0xc3", r.errors[1].what)
    assert.are.same({ 2, 30 }, { r.errors[1].line, r.errors[1].col })
  end)

  it("allows any non-NUL byte inside comments and strings", function()
    local r = pp.ptx.scan(".version 8.0 // caf\xc3\xa9 \1\127\n.file 1 \"/src/\xc3\xa9.cu\"\n.target sm_90\n")
    assert.are.same({}, r.errors)
    assert.are.equal("sm_90", r.target)
  end)

  it("reports an unterminated block comment where it opens", function()
    local text = oracle.read(FIXTURES .. "unterminated_comment.ptx")
    local r = pp.ptx.scan(text)
    assert.are.same({ "unterminated block comment", 5, 1 }, { r.errors[1].what, r.errors[1].line, r.errors[1].col })
    assert.are.same({}, r.entries)
  end)

  it("reports an unterminated string where it opens and goes on", function()
    local r = pp.ptx.scan('.version 8.0\n.entry k()\n{\n\t.pragma "open;\n\tret;\n}\n')
    assert.are.same({ "unterminated string literal", 4, 10 }, { r.errors[1].what, r.errors[1].line, r.errors[1].col })
    assert.are.equal(1, r.entries[1].instructions)
  end)

  it("stops at a line longer than max_line", function()
    local text = ".version 8.0\n.target sm_90\n// " .. ("x"):rep(500) .. "\n.entry late() { ret; }\n"
    local r = pp.ptx.scan(text, { max_line = 100 })
    check_invariants(text, r)
    assert.are.same({ "line longer than 100 bytes", 3, 101 }, { r.errors[1].what, r.errors[1].line, r.errors[1].col })
    assert.are.same({}, r.entries)
    assert.is_false(pp.ptx.scan(text).partial)
    -- the limit holds on the last line too, newline or not
    local tail = ".version 8.0\n" .. ("y"):rep(200)
    assert.are.equal(2, pp.ptx.scan(tail, { max_line = 100 }).errors[1].line)
  end)

  it("survives random bytes and random splices of real PTX", function()
    local base = oracle.read(KERNELS .. "gridsync.ptx") .. oracle.read(FIXTURES .. "comments_strings.ptx")
    local rand = lcg(987654321)
    local pieces = { "{", "}", "(", ")", ";", "/*", "*/", "//", "\"", "\n", "\0", ".entry", ".func",
      ".param", ".reg", "[", "]", "<", ">", ",", "@", "\255", ".global", "=", "atom.global.add.u32", MARKER }
    for _ = 1, 400 do
      local t = {}
      for i = 1, rand(40) + 1 do
        if rand(3) == 0 then
          t[i] = pieces[rand(#pieces) + 1]
        else
          local a = rand(#base) + 1
          t[i] = base:sub(a, a + rand(80))
        end
      end
      local text = table.concat(t)
      local r = pp.ptx.scan(text, { max_line = 1 + rand(300) })
      check_invariants(text, r)
      assert.are.equal(pp.ptx.count(text, MARKER), r.markers[MARKER])
    end
  end)

  it("keeps at most 16 errors and counts the rest", function()
    local text = (".bogus\n"):rep(40)
    local r = pp.ptx.scan(text)
    assert.are.equal(16, #r.errors)
    assert.are.equal(24, r.errors_dropped)
    assert.are.equal("unknown directive '.bogus' at module scope", r.errors[1].what)
    assert.are.equal(40, r.errors[16].line + 24)
  end)
end)

describe("pp.ptx declarations", function()
  it("merge a declaration with its later definition, keeping the definition's parameters", function()
    local r = pp.ptx.scan(table.concat({
      ".version 8.0", ".target sm_90", ".address_size 64",
      ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);",
      ".func (.param .b32 r) helper(.param .b32 a);",
      ".visible .entry k(.param .u32 n);",
      ".func (.param .b32 r) helper(.param .b32 a, .param .b64 b)", "{", "\tret;", "}",
      ".visible .entry k(.param .u32 n, .param .u64 p)", "{", "\tret;", "}",
      ".func (.param .b32 r) helper(.param .b32 a, .param .b64 b)", "{", "\tret;", "}", "" }, "\n"))
    assert.are.same({}, r.errors)
    assert.are.same({ "vprintf", "helper", "helper" }, r.funcs) -- defined twice: two records
    assert.are.equal(1, #r.entries)
    local k = r.entries[1]
    assert.is_true(k.defined)
    assert.are.same({ "n", "p" }, names(k.params))
    assert.are.same({ 0, 8 }, { k.params[1].offset, k.params[2].offset })
  end)

  it("stop at 65536 functions of a kind, saying so", function()
    local t = {}
    for i = 1, 65537 do t[i] = ".func f" .. i .. ";" end
    local r = pp.ptx.scan(table.concat(t, "\n"))
    assert.are.equal(65536, #r.funcs)
    assert.is_true(r.partial)
    assert.are.same({ "more than 65536 funcs; scan stopped", 65537, 7 },
      { r.errors[1].what, r.errors[1].line, r.errors[1].col })
  end)
end)

describe("pp.ptx misuse and environment", function()
  it("raises on bad arguments and options, naming them", function()
    assert.has_error(function() pp.ptx.scan(nil) end)
    assert.has_error(function() pp.ptx.scan("x", { bogus = 1 }) end,
      "pp.ptx.scan: unknown option 'bogus' (valid: markers, counter_global, max_line)")
    assert.has_error(function() pp.ptx.scan("x", { markers = {} }) end)
    assert.has_error(function() pp.ptx.scan("x", { markers = { "" } }) end)
    assert.has_error(function() pp.ptx.scan("x", { markers = { ("m"):rep(257) } }) end)
    assert.has_error(function() pp.ptx.scan("x", { max_line = 0 }) end)
    assert.has_error(function() pp.ptx.scan("x", { counter_global = 3 }) end)
    assert.has_error(function() pp.ptx.count("x", "") end)
    assert.has_error(function() pp.ptx.digest({}) end)
  end)

  it("returns nil and a message for a file it cannot read", function()
    local r, err = pp.ptx.scan_file("spec/fixtures/ptx/no-such-file.ptx")
    assert.is_nil(r)
    assert.matches("cannot read 'spec/fixtures/ptx/no%-such%-file.ptx'", err)
    r, err = pp.ptx.scan_file("spec/fixtures/ptx")
    assert.is_nil(r)
    assert.matches("cannot read", err)
  end)

  it("has an empty, complete result for empty text", function()
    local r = pp.ptx.scan("")
    assert.are.same({ 0, 0, false }, { r.bytes, r.lines, r.partial })
    assert.are.same({}, r.entries)
    assert.are.equal(0, r.markers[MARKER])
  end)
end)
