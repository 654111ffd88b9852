-- Entry points that mirror the reference probe's API (charge_since,
-- charge_nested, measure_nested, phase_ns, ticks_to_ns): what each charges,
-- and what it leaves alone. Times are checked from below only (a spin of
-- known length on the probe clock); no figure is assumed of the machine.
local pp = require "phaseprobe"
local probe = require "helpers.probe"
local fresh = probe.fresh

local SPIN_NS = 200000

-- Busy-waits SPIN_NS on the probe clock.
local function spin()
  local t0 = pp.now()
  while pp.now() - t0 < SPIN_NS do end
end

local function named_others(rec, except)
  local sum = 0
  for _, ph in ipairs(pp.default_schema().phases) do
    if ph ~= except then sum = sum + rec[ph .. "_ns"] end
  end
  return sum
end

-- One dispatch whose only charge is charge(name, t), a spin after t = pp.mark():
-- its record, and t.
local function spun_charge(charge, name)
  pp.begin()
  local t = pp.mark()
  spin()
  charge(name, t)
  return pp.emit {}, t
end

describe("the reference's entry points", function()
  before_each(fresh)
  after_each(function() pp.enable() end)

  it("charge_since(phase, t) charges the time since t to that phase alone", function()
    local rec = spun_charge(pp.charge_since, "lease")
    assert.is_true(rec.lease_ns >= SPIN_NS, rec.lease_ns)
    assert.are.equal(0, named_others(rec, "lease"))
    assert.are.equal(rec.lease_ns, rec.named_host_ns)
  end)

  it("charge_since without a start, or disabled, charges nothing", function()
    pp.begin()
    pp.charge_since("lease", nil)
    local t = pp.mark()
    pp.disable()
    spin()
    pp.charge_since("lease", t)
    pp.enable()
    local rec = pp.emit {}
    assert.are.equal(0, rec.lease_ns)
  end)

  it("charge_nested(region, t) charges a sub_ field, never the phase sum", function()
    local rec, t = spun_charge(pp.charge_nested, "ptx_digest")
    assert.is_true(rec.sub_ptx_digest_ns >= SPIN_NS, rec.sub_ptx_digest_ns)
    assert.are.equal(0, rec.sub_ptx_vsa_ns)
    assert.are.equal(0, rec.named_host_ns)
    assert.has_error(function() pp.charge_nested("ptx", t) end)
  end)

  it("measure_nested(region, fn, ...) returns fn's results and charges the region", function()
    pp.begin()
    local a, b = pp.measure_nested("ptx_vsa", function(x, y)
      spin()
      return y, x
    end, 1, 2)
    assert.are.equal(2, a)
    assert.are.equal(1, b)
    local rec = pp.emit {}
    assert.is_true(rec.sub_ptx_vsa_ns >= SPIN_NS, rec.sub_ptx_vsa_ns)
    assert.are.equal(0, rec.named_host_ns)
  end)

  it("measure_nested charges the region when fn raises, and raises on", function()
    pp.begin()
    local ok, err = pcall(pp.measure_nested, "ptx_vsa", function()
      spin()
      error("boom", 0)
    end)
    assert.is_false(ok)
    assert.are.equal("boom", err)
    local rec = pp.emit {}
    assert.is_true(rec.sub_ptx_vsa_ns >= SPIN_NS, rec.sub_ptx_vsa_ns)
  end)

  it("phase_ns(phase) reads what the open dispatch has charged so far", function()
    pp.begin()
    assert.are.equal(0, pp.phase_ns("ptx"))
    pp.add_ns("ptx", 1234)
    pp.add_ns("ptx", 1000)
    assert.are.equal(2234, pp.phase_ns("ptx"))
    assert.are.equal(0, pp.phase_ns("stage"))
    assert.has_error(function() pp.phase_ns("nosuch") end)
    pp.emit {}
    assert.are.equal(0, pp.phase_ns("ptx")) -- no dispatch open
  end)

  it("ticks_to_ns(from, to) converts marks, saturating at 0 backwards", function()
    local t0 = pp.mark()
    spin()
    local t1 = pp.mark()
    local ns = pp.ticks_to_ns(t0, t1)
    assert.are.equal("integer", math.type(ns))
    assert.is_true(ns >= SPIN_NS, ns)
    assert.are.equal(0, pp.ticks_to_ns(t1, t0))
    assert.are.equal(0, pp.ticks_to_ns(t0, t0))
  end)
end)
