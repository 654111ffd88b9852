-- pp.ptx facts that must be right or flagged: grid syncs recognised by
-- their structure (an arrive on an address, then a loop that re-reads it),
-- in nvcc's release and debug (-G) code and in hand-written patterns; and
-- numbers in declarations that PTX does not allow or that no count can hold
-- (alignments, register counts, array lengths, launch bounds), which make
-- the result partial with an error at their line and column.
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local oracle = require "helpers.ptx_oracle"

local FIXTURES = "spec/fixtures/ptx/"
local HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n"

local by_name = oracle.by_name

-- The scan of one entry whose body is `lines`, read twice: as written
-- (simple lines go through the scanner's fast line reader) and with a
-- comment at the end of every line (every line through its statement
-- loop). Both must agree; returns the entry and the result.
local function entry(lines, decls)
  local body = table.concat(lines, "\n")
  local text = HEADER .. (decls or "") .. ".visible .entry k(.param .u64 k_p)\n{\n"
    .. "\t.reg .b64 %rd<16>;\n\t.reg .b32 %r<16>;\n\t.reg .pred %p<4>;\n"
    .. body .. "\n\tret;\n}\n"
  local commented = HEADER .. (decls or "") .. ".visible .entry k(.param .u64 k_p)\n{\n"
    .. "\t.reg .b64 %rd<16>;\n\t.reg .b32 %r<16>;\n\t.reg .pred %p<4>;\n"
    .. body:gsub("\n", " // c\n") .. " // c\n\tret;\n}\n"
  local r, c = pp.ptx.scan(text), pp.ptx.scan(commented)
  assert.are.same({}, r.errors, text)
  assert.are.same({}, c.errors, commented)
  assert.are.equal(r.entries[1].grid_syncs, c.entries[1].grid_syncs, "the two readers disagree on\n" .. text)
  assert.are.equal(r.entries[1].instructions, c.entries[1].instructions)
  return r.entries[1], r
end

describe("pp.ptx grid syncs", function()
  it("finds the three syncs of nvcc's debug (-G) code, and none in one atomicAdd and a volatile read", function()
    local src = oracle.read(FIXTURES .. "syncs.cu")
    local body = src:match("void debug_syncs.-\n}\n")
    local in_source = select(2, body:gsub("grid%.sync%(%)", "")) + select(2, body:gsub("cg::sync%(grid%)", ""))
    assert.are.equal(3, in_source)
    for _, f in ipairs({ "syncs-G.ptx", "syncs.ptx" }) do
      local r = pp.ptx.scan_file(FIXTURES .. f)
      assert.are.same({}, r.errors, f)
      local e = by_name(r.entries)
      assert.are.equal(in_source, e.debug_syncs.grid_syncs, f)
      assert.is_true(e.debug_syncs.grid_sync, f)
      -- atomicAdd(&tickets, 1) then one volatile read of tickets: no loop
      assert.is_true(e.ticket_then_peek.atomics > 0 or #r.funcs > 0, f)
      assert.are.equal(0, e.ticket_then_peek.grid_syncs, f)
      assert.is_false(e.ticket_then_peek.grid_sync, f)
      assert.is_true(r.grid_sync, f)
    end
  end)

  it("takes an arrive followed by a loop that re-reads the same address, however far apart", function()
    local near = entry({
      "\tatom.global.add.u32 %r1, [%rd1], 1;",
      "$SPIN:",
      "\tld.volatile.global.u32 %r2, [%rd1];",
      "\tsetp.lt.u32 %p1, %r2, %r3;",
      "\t@%p1 bra $SPIN;",
    })
    assert.are.equal(1, near.grid_syncs)
    local filler = {}
    for i = 1, 200 do filler[i] = "\tadd.s32 %r5, %r5, " .. i .. ";" end
    local far = { "\tred.release.gpu.global.add.u32 [%rd1+8], 1;" }
    for _, l in ipairs(filler) do far[#far + 1] = l end
    far[#far + 1] = "$LOOP:"
    far[#far + 1] = "\tld.acquire.gpu.global.u32 %r2, [%rd1+8];"
    for _, l in ipairs(filler) do far[#far + 1] = l end
    far[#far + 1] = "\t@%p1 bra.uni $LOOP;"
    assert.are.equal(1, entry(far).grid_syncs)
  end)

  it("follows the address through register copies, as debug code moves it", function()
    local e = entry({
      "\tmov.u64 %rd1, counter;",
      "\tmov.b64 %rd2, %rd1;",
      "\tatom.add.release.gpu.u32 %r1, [%rd2], %r4;",
      "\tmov.b64 %rd6, %rd1;",
      "\tmov.u64 %rd3, %rd6;",
      "$L__BB0_1:",
      "\tld.acquire.gpu.u32 %r2, [%rd3];",
      "\txor.b32 %r5, %r2, %r1;",
      "\tsetp.gt.s32 %p1, %r5, -1;",
      "\t@%p1 bra $L__BB0_1;",
      "\tatom.global.add.u32 %r1, [%rd2], 1;", -- and the symbol itself
      "$again:",
      "\tld.relaxed.gpu.global.u32 %r2, [counter];",
      "\t@%p2 bra $again;",
    }, ".global .align 4 .u32 counter;\n")
    assert.are.equal(2, e.grid_syncs)
  end)

  it("does not take an arrive and one read with no loop back to it", function()
    local cases = {
      { -- one atomicAdd then one volatile read of the same address
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "\tld.volatile.global.u32 %r2, [%rd1];",
        "\tsub.s32 %r3, %r2, %r1;",
      },
      { -- a loop that reads another address
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "$L1:",
        "\tld.volatile.global.u32 %r2, [%rd2];",
        "\t@%p1 bra $L1;",
      },
      { -- a branch forward, past the read: no loop
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "\tld.volatile.global.u32 %r2, [%rd1];",
        "\t@%p1 bra $L2;",
        "\tadd.s32 %r3, %r3, 1;",
        "$L2:",
        "\tadd.s32 %r3, %r3, 2;",
      },
      { -- a loop that holds the arrive itself: a ticket taken again and again
        "$L3:",
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "\tld.volatile.global.u32 %r2, [%rd1];",
        "\t@%p1 bra $L3;",
      },
      { -- the register is a copy of the address no more: redefined after the copy
        "\tmov.b64 %rd3, %rd1;",
        "\tadd.s64 %rd3, %rd3, 8;",
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "$L4:",
        "\tld.volatile.global.u32 %r2, [%rd3];",
        "\t@%p1 bra $L4;",
      },
      { -- the copied register changed, not the copy: the copy still holds the old address
        "\tmov.b64 %rd2, %rd1;",
        "\tatom.global.add.u32 %r1, [%rd2], 1;",
        "\tld.param.u64 %rd1, [k_p];",
        "$L5:",
        "\tld.volatile.global.u32 %r2, [%rd1];",
        "\t@%p1 bra $L5;",
      },
      { -- a plain (cached) load can never see the other blocks arrive
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "$L6:",
        "\tld.global.u32 %r2, [%rd1];",
        "\t@%p1 bra $L6;",
      },
      { -- shared memory: the threads of one block, not the grid
        "\tatom.shared.add.u32 %r1, [%rd1], 1;",
        "$L7:",
        "\tld.volatile.shared.u32 %r2, [%rd1];",
        "\t@%p1 bra $L7;",
      },
    }
    for i, lines in ipairs(cases) do
      assert.are.equal(0, entry(lines).grid_syncs, "case " .. i .. ":\n" .. table.concat(lines, "\n"))
    end
    -- the copy that kept the old address is the counter's, and is followed
    local kept = entry({
      "\tmov.b64 %rd2, %rd1;",
      "\tatom.global.add.u32 %r1, [%rd2], 1;",
      "\tld.param.u64 %rd1, [k_p];",
      "$L8:",
      "\tld.volatile.global.u32 %r2, [%rd2];",
      "\t@%p1 bra $L8;",
    })
    assert.are.equal(1, kept.grid_syncs)
  end)

  it("finds the barriers that spin on an atomic in nvcc's release and debug (-G) code", function()
    local src = oracle.read(FIXTURES .. "atomic_poll.cu")
    for _, name in ipairs { "poll_add", "poll_or", "poll_cas", "lone_add", "add_then_peek", "take_work" } do
      assert.truthy(src:find("void " .. name .. "(", 1, true), name)
    end
    for _, f in ipairs({ "atomic_poll.ptx", "atomic_poll-G.ptx" }) do
      local r = pp.ptx.scan_file(FIXTURES .. f)
      assert.are.same({}, r.errors, f)
      local e = by_name(r.entries)
      for _, name in ipairs { "poll_add", "poll_or", "poll_cas" } do
        assert.are.equal(1, e[name].grid_syncs, f .. ": " .. name)
        assert.is_true(e[name].grid_sync, f .. ": " .. name)
        -- the arrive and the atomic read, inline or called (-G)
        assert.are.equal(2, e[name].atomics, f .. ": " .. name)
      end
      for _, name in ipairs { "lone_add", "add_then_peek", "take_work" } do
        assert.are.equal(0, e[name].grid_syncs, f .. ": " .. name)
      end
      assert.are.equal(1, e.lone_add.atomics, f)
    end
  end)

  it("takes an atomic that reads and leaves the value as it is as the loop's read", function()
    local function poll(read)
      return {
        "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "$P:",
        read,
        "\tsetp.lt.u32 %p1, %r2, %r3;",
        "\t@%p1 bra $P;",
      }
    end
    for _, read in ipairs {
      "\tatom.global.add.u32 %r2, [%rd1], 0;",
      "\tatom.add.u32 %r2, [%rd1], 0x0;",
      "\tatom.global.add.u32 %r2, [%rd1], 0U;",
      "\tatom.global.or.b32 %r2, [%rd1], 0;",
      "\tatom.global.xor.b32 %r2, [%rd1], 0;",
      "\tatom.global.and.b32 %r2, [%rd1], -1;",
      "\tatom.global.and.b32 %r2, [%rd1], 0xffffffff;",
      "\tatom.global.and.b64 %rd9, [%rd1], 0xFFFFFFFFFFFFFFFF;",
      "\tatom.global.cas.b32 %r2, [%rd1], %r4, %r4;",
      "\tatom.acquire.gpu.global.cas.b32 %r2, [%rd1], -1, -1;",
    } do
      assert.are.equal(1, entry(poll(read)).grid_syncs, read)
    end
  end)

  it("does not take an atomic that writes, or one alone, for a spin read", function()
    local function poll(read, arrive)
      return {
        arrive or "\tatom.global.add.u32 %r1, [%rd1], 1;",
        "$Q:",
        read,
        "\tsetp.lt.u32 %p1, %r2, %r3;",
        "\t@%p1 bra $Q;",
      }
    end
    for i, c in ipairs {
      { "\tatom.global.add.u32 %r2, [%rd1], 1;" },     -- a ticket taken in a loop: work, not a read
      { "\tatom.global.add.u32 %r2, [%rd1], %r5;" },   -- a value not known to be 0
      { "\tatom.global.or.b32 %r2, [%rd1], 1;" },      -- sets a bit
      { "\tatom.global.and.b32 %r2, [%rd1], 0;" },     -- clears it
      { "\tatom.global.cas.b32 %r2, [%rd1], %r4, %r5;" }, -- swaps in another value
      { "\tatom.global.exch.b32 %r2, [%rd1], %r4;" },
      { "\tred.global.add.u32 [%rd1], 0;" },           -- no value comes back
      { "\tatom.global.add.u32 %r2, [%rd2], 0;" },     -- another address
      { "\tatom.shared.add.u32 %r2, [%rd1], 0;", "\tatom.shared.add.u32 %r1, [%rd1], 1;" },
    } do
      assert.are.equal(0, entry(poll(c[1], c[2])).grid_syncs, "case " .. i .. ": " .. c[1])
    end
    -- one atomicAdd and one atomic read, no loop; one atomicAdd alone
    assert.are.equal(0, entry({ "\tatom.global.add.u32 %r1, [%rd1], 1;",
      "\tatom.global.add.u32 %r2, [%rd1], 0;", "\tsub.s32 %r3, %r2, %r1;" }).grid_syncs)
    assert.are.equal(0, entry({ "\tatom.global.add.u32 %r1, [%rd1], 1;" }).grid_syncs)
    assert.are.equal(0, entry({ "$R:", "\tatom.global.add.u32 %r1, [%rd1], 1;", "\t@%p1 bra $R;" }).grid_syncs)
  end)

  it("follows nvcc's calls of its atomic functions, the address passed in a parameter (-G)", function()
    local decls = ".global .align 4 .u32 counter;\n"
    local function called(fn, values, ret)
      local lines = { "\t{", "\t.param .b64 param0;", "\tst.param.b64 [param0+0], %rd" .. values.at .. ";" }
      local args = { "param0" }
      for i, v in ipairs(values) do
        lines[#lines + 1] = "\t.param .b32 param" .. i .. ";"
        lines[#lines + 1] = "\tst.param.b32 [param" .. i .. "+0], " .. v .. ";"
        args[#args + 1] = "param" .. i
      end
      lines[#lines + 1] = "\t.param .b32 retval0;"
      lines[#lines + 1] = "\tcall.uni " .. (ret == false and "" or "(retval0), ") .. "\n\t" .. fn .. ", \n\t(\n\t"
        .. table.concat(args, ", \n\t") .. "\n\t);"
      lines[#lines + 1] = "\tld.param.b32 %r2, [retval0+0];"
      lines[#lines + 1] = "\t}"
      return table.concat(lines, "\n")
    end
    local function barrier(poll_fn, poll_values, arrive_fn, ret)
      return {
        "\tmov.u64 %rd5, counter;",
        "\tcvta.global.u64 %rd6, %rd5;",
        called(arrive_fn or "_Z9atomicAddPjj", { 1, at = 6 }),
        "$L__BB0_2:",
        "\tmov.u64 %rd7, counter;",
        "\tcvta.global.u64 %rd8, %rd7;",
        called(poll_fn, poll_values, ret),
        "\tsetp.lt.u32 %p3, %r2, %r1;",
        "\t@%p3 bra $L__BB0_3;",
        "\tbra.uni $L__BB0_2;",
        "$L__BB0_3:",
      }
    end
    assert.are.equal(1, entry(barrier("_Z9atomicAddPjj", { 0, at = 8 }), decls).grid_syncs)
    assert.are.equal(1, entry(barrier("_ZN45_INTERNAL_8a59a8e1_14_atomic_poll_cu_poll_add8atomicOrEPjj",
      { 0, at = 8 }), decls).grid_syncs)
    assert.are.equal(1, entry(barrier("__uAtomicCAS", { -1, -1, at = 8 }), decls).grid_syncs)
    assert.are.equal(1, entry(barrier("__uAtomicAdd", { 0, at = 8 }, "__uAtomicAdd"), decls).grid_syncs)
    -- not a read: a value added, another address, no result, not an atomic
    assert.are.equal(0, entry(barrier("_Z9atomicAddPjj", { 1, at = 8 }), decls).grid_syncs)
    assert.are.equal(0, entry(barrier("_Z9atomicAddPjj", { 0, at = 9 }), decls).grid_syncs)
    -- the global address and the generic one (cvta) of the counter name the same memory
    assert.are.equal(1, entry(barrier("_Z9atomicAddPjj", { 0, at = 5 }), decls).grid_syncs)
    assert.are.equal(0, entry(barrier("_Z9atomicAddPjj", { 0, at = 8 }, nil, false), decls).grid_syncs)
    assert.are.equal(0, entry(barrier("_Z9atomicExchPjj", { 0, at = 8 }), decls).grid_syncs)
    assert.are.equal(0, entry(barrier("my_poll", { 0, at = 8 }), decls).grid_syncs)
    -- and a called atomicAdd alone is no grid sync
    local lone = entry({ "\tmov.u64 %rd5, counter;", "\tcvta.global.u64 %rd6, %rd5;",
      called("_Z9atomicAddPjj", { 1, at = 6 }) }, decls)
    assert.are.same({ 0, 1 }, { lone.grid_syncs, lone.atomics })
  end)

  it("counts one sync per arrive, however many times its loop reads", function()
    local e = entry({
      "\tatom.global.add.u32 %r1, [%rd1], 1;",
      "$S:",
      "\tld.volatile.global.u32 %r2, [%rd1];",
      "\tld.volatile.global.u32 %r3, [%rd1];",
      "\t@%p1 bra $S;",
      "\t@%p2 bra $S;",
    })
    assert.are.equal(1, e.grid_syncs)
  end)
end)

describe("pp.ptx numbers no PTX allows", function()
  -- ptxas refuses each of these ("Alignment must be a power of two",
  -- "Constant overflow"), or no 64-bit signed count holds it.
  local function scan(text)
    local r = pp.ptx.scan(HEADER .. text)
    return r, r.errors[1]
  end

  -- The error of a scan that must stop partway: asserts that it did.
  local function scan_error(text)
    local r, e = scan(text)
    assert.is_true(r.partial, text)
    assert.is_not_nil(e, text)
    return e
  end

  local function at(text, needle)
    local full = HEADER .. text
    local pos = assert(full:find(needle, 1, true), needle)
    return oracle.position(full, pos)
  end

  -- The error of a scan of text that must stop partway, asserted to stand
  -- at the first needle in it (shift columns on: 0 unless given).
  local function error_at(text, needle, shift)
    local e = scan_error(text)
    local line, col = at(text, needle)
    assert.are.same({ line, col + (shift or 0) }, { e.line, e.col }, text .. " -> " .. e.what)
    return e
  end

  it("makes an alignment that is no power of two, or too large, an error at its number", function()
    for _, a in ipairs({ "3", "0", "6", "18446744073709551616", "4294967296", "0x100000000" }) do
      for _, text in ipairs({
        ".visible .entry k(.param .align " .. a .. " .b8 k_p[8]) { ret; }\n",
        ".global .align " .. a .. " .b8 g[8];\n",
        ".visible .entry k() { .shared .align " .. a .. " .b8 s[8]; ret; }\n",
        ".visible .entry k(.param .u64 .ptr .global .align " .. a .. " k_p) { ret; }\n",
      }) do
        local e = error_at(text, " " .. a .. " ", 1) -- the number after the space
        assert.matches("alignment", e.what, 1, true)
      end
    end
    for _, a in ipairs({ "1", "2", "4", "16", "2147483648" }) do
      local r = scan(".visible .entry k(.param .align " .. a .. " .b8 k_p[8]) { ret; }\n")
      assert.are.same({}, r.errors, a)
      assert.are.equal(math.tointeger(tonumber(a)), r.entries[1].params[1].align)
    end
  end)

  it("makes register counts and array lengths past 2^63-1 an error at their number", function()
    local big = { "9223372036854775808", "18446744073709551615", "18446744073709551616",
                  "0x8000000000000000", "99999999999999999999999" }
    for _, n in ipairs(big) do
      for _, text in ipairs({
        ".visible .entry k() { .reg .b32 %r<" .. n .. ">; ret; }\n",
        ".visible .entry k() { .reg .v4 .b32 %r<" .. n .. ">; ret; }\n",
        ".global .b8 g[" .. n .. "];\n",
        ".global .b8 g[2][" .. n .. "];\n",
        ".visible .entry k(.param .align 8 .b8 k_p[" .. n .. "]) { ret; }\n",
        ".visible .entry k() { .local .b8 l[" .. n .. "]; ret; }\n",
      }) do
        error_at(text, n)
      end
    end
    -- 2^63-1 itself is a count, but the bytes it takes are not
    local r = scan(".visible .entry k() { .reg .b32 %r<9223372036854775807>; ret; }\n")
    assert.are.same({}, r.errors)
    assert.are.equal(math.maxinteger, r.entries[1].registers[".b32"])
    local r2, e2 = scan(".global .b32 g[9223372036854775807];\n")
    assert.is_true(r2.partial)
    assert.matches("size", e2.what, 1, true)
    -- sums past it: registers of one class, a body's shared bytes
    local r3, e3 = scan(".visible .entry k() { .reg .b32 %r<9223372036854775807>;\n"
      .. ".reg .b32 %q<2>; ret; }\n")
    assert.is_true(r3.partial)
    assert.are.same({ 5, 14 }, { e3.line, e3.col })
    local r4 = scan(".visible .entry k() { .shared .b8 a[9223372036854775807];\n"
      .. ".shared .b8 b[2]; ret; }\n")
    assert.is_true(r4.partial)
    assert.are.equal(5, r4.errors[1].line)
  end)

  it("makes launch bounds and the address size past 32 bits an error at their number", function()
    for _, text in ipairs({
      ".visible .entry k() .maxntid 4294967296 { ret; }\n",
      ".visible .entry k() .maxntid 32, 4294967297 { ret; }\n",
      ".visible .entry k() .reqntid 1, 1, 18446744073709551616 { ret; }\n",
      ".visible .entry k() .minnctapersm 4294967296 { ret; }\n",
      ".visible .entry k() .maxnreg 4294967296 { ret; }\n",
    }) do
      error_at(text, text:match("%d%d%d%d%d%d%d%d%d%d+"))
    end
    local r = pp.ptx.scan(".version 8.0\n.address_size 4294967360\n")
    assert.is_true(r.partial)
    assert.are.same({ 2, 15 }, { r.errors[1].line, r.errors[1].col })
    assert.are.same({}, scan(".visible .entry k() .maxntid 4294967295 { ret; }\n").errors)
  end)
end)
