-- Phase derivation, starvation and residue, comparisons and what-if
-- projections, against hand-computed figures.
local records = require "phaseprobe.records"
local analyze = require "phaseprobe.analysis.analyze"
local compare = require "phaseprobe.analysis.compare"
local whatif = require "phaseprobe.analysis.whatif"
local near = require("helpers.numbers").near

-- Two shapes. Per dispatch: prose (encode 1) and cjk (encode 2); the
-- fields are in our line order.
local function rec(t)
  local named = t.prepare + t.ptx + t.lease
  return string.format("d seq=%d shape=%s encode=%d nodes=%d wall_ns=%d enqueue_ns=%d "
    .. "device_window_ns=%d kernel_ns=%d prepare_ns=%d ptx_ns=%d lease_ns=%d sub_ptx_digest_ns=%d "
    .. "named_host_ns=%d unattributed_ns=%d ptx_cache_hits=%d ptx_cache_misses=%d probe_ns=10%s",
    t.seq, t.shape, t.encode, t.nodes, named + t.unattr, t.enq, t.win, t.kern, t.prepare, t.ptx,
    t.lease, t.digest, named, t.unattr, t.miss == 1 and 0 or 1, t.miss, t.knob and (" knob=" .. t.knob) or "")
end

local ROWS = {
  { seq = 1, shape = "prose", encode = 1, nodes = 10, enq = 1000, win = 1000, kern = 600,
    prepare = 100, ptx = 1000, lease = 200, digest = 500, unattr = 50, miss = 0 },
  { seq = 2, shape = "prose", encode = 1, nodes = 10, enq = 1000, win = 0, kern = 0,
    prepare = 100, ptx = 1200, lease = 200, digest = 600, unattr = 150, miss = 0 },
  { seq = 3, shape = "cjk", encode = 2, nodes = 40, enq = 4100, win = 2000, kern = 1500,
    prepare = 100, ptx = 3600, lease = 900, digest = 2000, unattr = 100, miss = 1 },
  { seq = 4, shape = "cjk", encode = 2, nodes = 40, enq = 3700, win = 900, kern = 1000,
    prepare = 130, ptx = 3200, lease = 900, digest = 2000, unattr = 70, miss = 0 },
  { seq = 5, shape = "cjk", encode = 2, nodes = 40, enq = 3300, win = 1200, kern = 0,
    prepare = 70, ptx = 2800, lease = 900, digest = 2000, unattr = 130, miss = 0 },
}
-- walls: 1350, 1650 | 4700, 4300, 3900

local function data(extra)
  local lines = {}
  for i, t in ipairs(ROWS) do lines[i] = rec(t) end
  for _, t in ipairs(extra or {}) do lines[#lines + 1] = rec(t) end
  return (records.from_string(table.concat(lines, "\n")))
end

describe("analyze.schema", function()
  it("knows the reference's nine phases, its nested regions, quantities and cache", function()
    local set = records.read("spec/fixtures/logs/mixed.log")
    local info = analyze.schema(set)
    assert.are.equal("reference", info.rule)
    assert.are.same(require("phaseprobe.record").DEFAULT_PHASES, info.phases)
    assert.are.same({ { label = "sub_ptx_digest_ns", parent = "ptx_ns" },
      { label = "sub_ptx_vsa_ns", parent = "ptx_ns" } }, info.nested)
    assert.are.same({ "nodes", "ptx_bytes", "buffers", "bindings", "fixpoint", "grid_blocks",
      "ptx_cache_misses" }, info.quantities)
    assert.are.same({ "ptx" }, info.caches)
  end)

  it("derives another schema's phases from the line order", function()
    local set = records.from_string("c seq=1 items=3 wall_ns=10 kernel_ns=0 compile_ns=4 "
      .. "link_ns=5 sub_compile_parse_ns=2 sub_link_ns=1 named_host_ns=9 unattributed_ns=1 "
      .. "probe_ns=1 late_ns=3")
    local info = analyze.schema(set)
    assert.are.equal("order", info.rule)
    assert.are.same({ "compile_ns", "link_ns" }, info.phases)
    assert.are.same({ { label = "sub_compile_parse_ns", parent = "compile_ns" },
      { label = "sub_link_ns", parent = "link_ns" } }, info.nested)
    assert.are.same({ "items" }, info.quantities)
  end)

  it("falls back to every _ns field without kernel_ns", function()
    local info = analyze.schema(records.from_string("x foo_ns=1 bar_ns=2 wall_ns=3 sub_foo_a_ns=1 n=4"))
    assert.are.equal("suffix", info.rule)
    assert.are.same({ "foo_ns", "bar_ns" }, info.phases)
    assert.are.equal("foo_ns", info.nested[1].parent)
    assert.are.same({ "n" }, info.quantities)
  end)

  it("gives each phase's share of wall", function()
    local rows = analyze.phases(data())
    local by = {}
    for _, r in ipairs(rows) do by[r.name] = r end
    near(by.ptx_ns.share, 11800 / 15900)
    near(by.wall_ns.share, 1)
    assert.are.equal("nested", by.sub_ptx_digest_ns.kind)
    assert.are.equal("ptx_ns", by.sub_ptx_digest_ns.parent)
    assert.are.equal(500, by.unattributed_ns.summary.sum)
  end)
end)

describe("analyze.starvation", function()
  it("prices device_window_ns - kernel_ns over dispatches that measured both", function()
    local st = analyze.starvation(data())
    -- measured both: seq 1 (400), 3 (500), 4 (900 - 1000 saturates to 0)
    assert.are.equal(3, st.starvation.n)
    assert.are.equal(900, st.starvation.summary.sum)
    assert.are.equal(400, st.starvation.summary.median)
    near(st.starvation.share, 900 / (1350 + 4700 + 4300))
    assert.are.same({
      "device_window_ns not measured (0) in 1 of 5 records",
      "kernel_ns not measured (0) in 1 of 4 records with a device window",
    }, st.notes)
  end)

  it("gives the residue and the probe's own cost as ns and share of wall", function()
    local st = analyze.starvation(data())
    assert.are.equal(500, st.residue.summary.sum)
    near(st.residue.share, 500 / 15900)
    assert.are.equal(50, st.probe.summary.sum)
    near(st.probe.share, 50 / 15900)
  end)

  it("works per group", function()
    local per = analyze.by_group(data(), "shape", analyze.starvation)
    assert.are.equal("prose", per[1].key)
    assert.are.equal(400, per[1].result.starvation.summary.sum)
    assert.are.equal(500, per[2].result.starvation.summary.sum)
    near(per[2].result.residue.share, 300 / 12900)
  end)
end)

describe("compare", function()
  it("splits the per-dispatch difference by phase; shares sum to 1", function()
    local r = compare.by(data(), "shape", "prose", "cjk")
    assert.are.equal("shape=prose", r.a.label)
    assert.are.equal(2, r.a.n)
    assert.are.equal(3, r.b.n)
    assert.are.equal(1500, r.a.mean)
    near(r.b.mean, 4300)
    near(r.diff, 2800)
    local by, total, shares = {}, 0, 0
    for _, row in ipairs(r.rows) do
      by[row.name] = row
      total = total + row.diff
      shares = shares + row.share
    end
    near(total, r.diff)
    near(shares, 1)
    near(by.ptx_ns.diff, 2100)
    near(by.ptx_ns.share, 0.75)
    near(by.lease_ns.diff, 700)
    near(by.lease_ns.share, 0.25)
    near(by.prepare_ns.diff, 0)
    near(by.unattributed_ns.diff, 0)
    near(by["(other)"].diff, 0)
    assert.are.equal("sub_ptx_digest_ns", r.nested[1].name)
    near(r.nested[1].diff, 1450)
    near(r.nested[1].share, 1450 / 2800)
    assert.are.equal("ptx_ns", compare.ranked(r)[1].name)
  end)

  it("splits the per-encode difference into more and costlier dispatches", function()
    local pe = compare.by(data(), "shape", "prose", "cjk").per_encode
    assert.are.equal(2, pe.a_dispatches)
    assert.are.equal(3, pe.b_dispatches)
    near(pe.a, 3000)
    near(pe.b, 12900)
    near(pe.diff, 9900)
    near(pe.more_dispatches, 1500)
    near(pe.costlier_dispatches, 8400)
    near(pe.more_dispatches + pe.costlier_dispatches, pe.diff)
  end)

  it("keeps the rows adding up when records lack a phase", function()
    local a = records.from_string("d wall_ns=100 kernel_ns=0 x_ns=60 y_ns=40 named_host_ns=100")
    local b = records.from_string("d wall_ns=300 kernel_ns=0 x_ns=260 named_host_ns=260")
    local r = compare.sets(a, b)
    local by, total = {}, 0
    for _, row in ipairs(r.rows) do by[row.name] = row; total = total + row.diff end
    near(total, 200)
    near(by.x_ns.diff, 200)
    near(by.y_ns.diff, -40)
    near(by["(other)"].diff, 40)
    assert.has_error(function() compare.sets(a, a:where("x_ns", 1)) end,
      "phaseprobe.analysis.compare: group 'b' has no records")
  end)
end)

describe("whatif", function()
  local cjk = data():where("shape", "cjk")

  it("removes a nested region from wall and, on the enqueue side, from enqueue", function()
    local r = whatif.project(cjk, { remove = { "ptx_digest" } })
    near(r.measured.wall, 4300)
    near(r.projected.wall, 2300)
    near(r.measured.enqueue, 3700)
    near(r.projected.enqueue, 1700)
    assert.are.equal("remove ptx_digest", r.steps[1].what)
    near(r.steps[1].saved_wall, 2000)
  end)

  it("scales a phase, and keeps wait-side savings out of enqueue", function()
    local r = whatif.project(cjk, { scale = { lease = 0.25 } })
    near(r.projected.wall, 4300 - 675)
    near(r.projected.enqueue, 3700 - 675)
    local w = whatif.project(cjk, { scale = { lease = 0.5 } }, { wait_phases = { "lease_ns" } })
    near(w.projected.wall, 4300 - 450)
    near(w.projected.enqueue, 3700)
  end)

  it("turns cache misses into hits at the measured miss minus hit cost", function()
    local r = whatif.project(cjk, { hits = { "ptx" } })
    local p = r.steps[1].price
    assert.are.equal(3600, p.miss_cost)
    assert.are.equal(3000, p.hit_cost) -- median of 3200 and 2800
    assert.are.equal(600, p.saving)
    near(r.projected.wall, 4300 - 600 / 3)
    local none = whatif.project(data():where("shape", "prose"), { hits = { "ptx" } })
    near(none.projected.wall, none.measured.wall)
    assert.matches("no ptx cache misses", none.notes[1])
  end)

  it("projects per encode with fewer dispatches", function()
    local r = whatif.project(cjk, { remove = { "ptx_digest" }, dispatches = 2 })
    assert.are.equal(3, r.per_encode.dispatches)
    near(r.per_encode.measured.wall, 3 * 4300)
    near(r.per_encode.projected.wall, 2 * 2300)
    near(r.per_encode.projected.enqueue, 2 * 1700)
  end)

  it("shows the projection's error against a variant that was run", function()
    local set = data({
      { seq = 6, shape = "cjk", encode = 3, nodes = 40, enq = 1800, win = 0, kern = 0, prepare = 100,
        ptx = 1400, lease = 900, digest = 0, unattr = 0, miss = 0, knob = "memo_digest" },
      { seq = 7, shape = "cjk", encode = 3, nodes = 40, enq = 2000, win = 0, kern = 0, prepare = 100,
        ptx = 1600, lease = 900, digest = 0, unattr = 0, miss = 0, knob = "memo_digest" },
    })
    local base, variant = whatif.split(set:where("shape", "cjk"), "knob", "memo_digest")
    assert.are.equal(3, base:count())
    assert.are.equal(2, variant:count())
    local r = whatif.check(base, variant, { remove = { "ptx_digest" } })
    near(r.variant.wall, 2500)
    near(r.projected.wall, 2300)
    near(r.error.wall, (2300 - 2500) / 2500)
    near(r.variant.enqueue, 1900)
    near(r.error.enqueue, (1700 - 1900) / 1900)
  end)

  it("refuses overlapping steps and unknown names, naming what is known", function()
    assert.has_error(function() whatif.project(cjk, { remove = { "ptx", "ptx_digest" } }) end,
      "phaseprobe.analysis.whatif: the scenario touches both ptx_ns and its nested region sub_ptx_digest_ns; they overlap")
    assert.has_error(function() whatif.project(cjk, { remove = { "frobnicate" } }) end,
      "phaseprobe.analysis.whatif: no phase or nested region 'frobnicate' (valid: prepare, ptx, lease, ptx_digest)")
    assert.has_error(function() whatif.project(cjk, { scale = { ptx = -1 } }) end)
  end)
end)

describe("the progress of the analysis steps (opts.progress)", function()
  local gen = dofile("bench/gen_log.lua")
  local function generated(n)
    local path = os.tmpname()
    gen.write(path, n, { extra = true })
    local set = records.read(path)
    os.remove(path)
    return set
  end
  local big = generated(3000)

  -- A progress factory that records each step: what, total, unit, the
  -- updates (done, label) and how often it was closed. shown: what its
  -- objects' active() says.
  local function recorder(shown)
    local steps = {}
    local function factory(what, o)
      local s = { what = what, total = o.total, unit = o.unit, updates = {}, closed = 0 }
      steps[#steps + 1] = s
      return {
        update = function(_, done, _, label) s.updates[#s.updates + 1] = { done = done, label = label } end,
        done = function() s.closed = s.closed + 1 end,
        active = function() return shown end,
      }
    end
    return factory, steps
  end

  -- every step: a total, updates that never fall and stay within it, the
  -- last at the total, closed once; returns the steps by what
  local function checked(steps)
    local by = {}
    for _, s in ipairs(steps) do
      assert.is_true(math.type(s.total) == "integer" and s.total >= 0, s.what)
      assert.is_string(s.unit, s.what)
      assert.are.equal(1, s.closed, s.what)
      local prev = 0
      for _, u in ipairs(s.updates) do
        assert.is_true(u.done >= prev and u.done <= s.total, s.what .. ": " .. u.done)
        prev = u.done
      end
      assert.are.equal(s.total, s.updates[#s.updates].done, s.what)
      by[s.what] = s
    end
    return by
  end

  -- The verdicts as plain data (what the text reports print from).
  local function verdicts(s)
    local out = {}
    for _, list in ipairs { s.phases, s.nested } do
      for _, v in ipairs(list) do
        out[#out + 1] = { v.name, v.kind, v.parent, v.verdict, v.reason, v.quantity, v.fixed_ns,
          v.ns_per_unit, v.quality }
      end
    end
    for _, u in ipairs(s.untested) do out[#out + 1] = { u.name, u.why } end
    return out
  end

  it("phases, scaling, starvation and variants each say every field they go through", function()
    local factory, steps = recorder(false)
    local o = { progress = factory }
    local ph = analyze.phases(big, nil, o)
    local s = analyze.scaling(big, o)
    local st = analyze.starvation(big, o)
    analyze.variants(big, o)
    local by = checked(steps)
    local L = big:layout()
    assert.are.equal(#ph, by["summarising the phases"].total)
    assert.are.equal("fields", by["summarising the phases"].unit)
    assert.are.equal(#L.phases + #L.nested, by["fitting the phases"].total)
    assert.are.equal(9, by["pricing the starvation"].total)
    assert.are.equal(1, by["looking for variants"].total) -- the shape tag
    -- each field named as it begins
    local labels = {}
    for _, u in ipairs(by["summarising the phases"].updates) do labels[#labels + 1] = u.label end
    assert.are.same({ "wall_ns", "prepare_ns", "ptx_ns" }, { labels[1], labels[2], labels[3] })
    labels = {}
    for _, u in ipairs(by["fitting the phases"].updates) do labels[u.label or ""] = true end
    assert.truthy(labels["the support of nodes"])
    assert.truthy(labels["readback_ns"])
    -- the same answers without it
    assert.are.same(verdicts(analyze.scaling(big)), verdicts(s))
    assert.are.same(analyze.starvation(big).starvation.summary, st.starvation.summary)
    assert.are.same(analyze.phases(big)[3].summary, ph[3].summary)
  end)

  it("fits a few fields at a time while the progress shows, with the same verdicts", function()
    local work = analyze.FIT_BATCH_WORK
    analyze.FIT_BATCH_WORK = 1000
    local factory, steps = recorder(true)
    local ok, s = pcall(analyze.scaling, big, { progress = factory })
    analyze.FIT_BATCH_WORK = work
    assert(ok, s)
    local by = checked(steps)
    -- the pieces named as they begin: prepare_ns to stage_ns, ...
    local pieces = {}
    for _, u in ipairs(by["fitting the phases"].updates) do
      if u.label and u.label:find(" to ", 1, true) then pieces[#pieces + 1] = u.label end
    end
    assert.are.same({ "prepare_ns to stage_ns", "resolve_ns to release_ns",
      "readback_ns to sub_ptx_vsa_ns" }, pieces)
    assert.are.same(verdicts(analyze.scaling(big)), verdicts(s))
    -- pieces only while a person watches, and only for large work
    assert.are.equal(1, #analyze.fit_batches(1e6, 7, { "a", "b", "c", "d", "e" }, false))
    assert.are.equal(1, #analyze.fit_batches(10, 7, { "a", "b", "c", "d", "e" }, true))
    assert.are.equal(2, #analyze.fit_batches(1e6, 7, { "a", "b", "c", "d", "e" }, true))
    assert.are.same({}, analyze.fit_batches(1e6, 7, {}, true))
  end)

  it("overrun goes through the records when some exceed their wall", function()
    local lines = {}
    for i = 1, 70000 do
      lines[i] = string.format("r seq=%d wall_ns=%d prepare_ns=%d named_host_ns=%d", i, 1000,
        i % 7 == 0 and 1500 or 500, i % 7 == 0 and 1500 or 500)
    end
    local set = records.from_string(table.concat(lines, "\n"))
    local factory, steps = recorder(false)
    local o = analyze.overrun(set, nil, { progress = factory })
    local by = checked(steps)
    local st = by["finding the records over their wall"]
    assert.are.equal(70000, st.total)
    assert.are.equal("records", st.unit)
    assert.is_true(#st.updates >= 2)
    assert.are.equal(10000, o.n)
    assert.are.same(analyze.overrun(set), o)
  end)

  it("compare and the HTML page say their steps too", function()
    local factory, steps = recorder(false)
    local r = compare.by(big, "shape", "small", "large", { progress = factory })
    local by = checked(steps)
    assert.truthy(by["comparing shape=small with shape=large"])
    assert.are.same(compare.by(big, "shape", "small", "large").rows, r.rows)
    factory, steps = recorder(false)
    local html = require "phaseprobe.output.html"
    local d = html.describe(big, { progress = factory })
    by = checked(steps)
    local L = big:layout()
    assert.are.equal(3 * (#L.counts + #L.phases + #L.nested + 6), by["summarising the groups"].total)
    assert.are.equal(#L.phases + #L.nested, by["drawing the plots"].total)
    assert.are.equal(#L.phases + #L.nested, by["fitting the phases"].total)
    assert.truthy(by["looking for variants"])
    assert.are.same(html.describe(big).groups, d.groups)
  end)
end)
