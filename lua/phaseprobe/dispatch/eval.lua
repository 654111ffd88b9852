-- phaseprobe.dispatch.eval: the CPU evaluation of a program, and the check of
-- a dispatch's outputs against it. Installs into phaseprobe.dispatch.program
-- (which loads it):
--
--   prog:evaluate(inputs, n [, fixpoint]) -> {name = array}
--   P.compare(prog, got, want [, tolerance]) -> true | false, message
--
-- Where it sits: the demo and the specs check every dispatch's outputs
-- against this evaluation, so a dispatch that times well but computes wrong
-- is caught.
return function(M, Program)
  local f32, OP, OP_NAMES = M.f32, M.OP, M.OP_NAMES
  -- counts as the reports write them: "1 element", "65,536 elements"
  local function count(...) return require("phaseprobe.output.report").count(...) end

  -- ---- the CPU evaluation -----------------------------------------------------
  -- Column-wise: each node computes all n elements before the next node runs.
  -- That equals per-thread program order because validation rules out
  -- cross-element reads of a buffer stored in the same stage, and barriers
  -- order the stages.

  local TEMPLATES = {
    [1] = { -- u32
      add = "(@1 + @2) & 0xFFFFFFFF", sub = "(@1 - @2) & 0xFFFFFFFF", mul = "(@1 * @2) & 0xFFFFFFFF",
      fma = "(@1 * @2 + @3) & 0xFFFFFFFF", min = "(@1 < @2) and @1 or @2", max = "(@1 > @2) and @1 or @2",
      xor = "@1 ~ @2",
    },
    [2] = { -- i32: wrap to the signed range
      add = "((@1 + @2 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
      sub = "((@1 - @2 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
      mul = "((@1 * @2 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
      fma = "((@1 * @2 + @3 + 0x80000000) & 0xFFFFFFFF) - 0x80000000",
      min = "(@1 < @2) and @1 or @2", max = "(@1 > @2) and @1 or @2", xor = "@1 ~ @2",
    },
    [3] = { -- f32: exact in double, then one rounding (fma rounds twice: compare with tolerance)
      add = "F(@1 + @2)", sub = "F(@1 - @2)", mul = "F(@1 * @2)", fma = "F(@1 * @2 + @3)",
      min = "FMIN(@1, @2)", max = "FMAX(@1, @2)",
    },
  }

  -- PTX min.f32 / max.f32: a NaN operand yields the other operand.
  local function fmin(x, y)
    if x ~= x then return y elseif y ~= y then return x end
    return x < y and x or y
  end
  local function fmax(x, y)
    if x ~= x then return y elseif y ~= y then return x end
    return x > y and x or y
  end

  local kernels = {}
  -- kernel(ty, op, kinds): kinds is a string of "c" (column) or "s" (scalar)
  -- per operand. All scalars: returns a scalar.
  local function kernel(ty, opname, kinds)
    local key = ty .. opname .. kinds
    local k = kernels[key]
    if k then return k end
    local expr = TEMPLATES[ty][opname]
    local names = { "a", "b", "c" }
    local allscalar = not kinds:find("c")
    expr = expr:gsub("@(%d)", function(d)
      local idx = tonumber(d)
      if kinds:sub(idx, idx) == "c" then return names[idx] .. "[i]" end
      return names[idx]
    end)
    local src
    if allscalar then
      src = "local F, FMIN, FMAX = ... return function(n, a, b, c) return " .. expr .. " end"
    else
      src = "local F, FMIN, FMAX = ... return function(n, a, b, c) local d = {} for i = 1, n do d[i] = "
        .. expr .. " end return d end"
    end
    k = assert(load(src, "=phaseprobe.dispatch.eval.kernel(" .. key .. ")"))(f32, fmin, fmax)
    kernels[key] = k
    return k
  end

  local function check_input(prog, bd, data, n)
    if type(data) ~= "table" then
      error(string.format("program '%s': input '%s' must be an array of %s, got %s",
        prog.name, bd.name, count(n, bd.type .. " value"), type(data)), 0)
    end
    if #data ~= n then
      error(string.format("program '%s': input '%s' has %s, expected n = %s",
        prog.name, bd.name, count(#data, "element"), count(n)), 0)
    end
    local col = {}
    for i = 1, n do
      local v = data[i]
      if bd.type == "f32" then
        if type(v) ~= "number" then
          error(string.format("program '%s': input '%s'[%d] is not a number", prog.name, bd.name, i), 0)
        end
        col[i] = f32(v)
      else
        local iv = math.tointeger(v)
        local lo, hi = 0, 0xFFFFFFFF
        if bd.type == "i32" then lo, hi = -0x80000000, 0x7FFFFFFF end
        if not iv or iv < lo or iv > hi then
          error(string.format("program '%s': input '%s'[%d] = %s is not a %s value", prog.name, bd.name, i,
            tostring(v), bd.type), 0)
        end
        col[i] = iv
      end
    end
    return col
  end

  local function fill(n, v)
    local t = {}
    for i = 1, n do t[i] = v end
    return t
  end

  local function shifted(col, k, n)
    k = k % n
    if k == 0 then return col end
    local d = table.move(col, k + 1, n, 1, {})
    return table.move(col, 1, k, n - k + 1, d)
  end

  --- prog:evaluate(inputs, n [, fixpoint]) -> {name = array} for every
  --- output and inout buffer (1-based arrays of n values). `inputs` holds an
  --- array of n values for every input and inout buffer; outputs start as
  --- zeros, as the dispatcher clears them.
  function Program:evaluate(inputs, n, fixpoint)
    if math.type(n) ~= "integer" or n < 1 then
      error(string.format("program '%s': evaluate: n must be a positive integer, got %s", self.name, tostring(n)), 2)
    end
    fixpoint = fixpoint or self.fixpoint
    inputs = inputs or {}
    local cols = {}
    for bi, bd in ipairs(self.buffers) do
      if bd.role == "output" then
        cols[bi] = fill(n, bd.type == "f32" and 0.0 or 0)
      else
        if inputs[bd.name] == nil then
          error(string.format("program '%s': evaluate: no data for %s buffer '%s'", self.name, bd.role, bd.name), 2)
        end
        cols[bi] = check_input(self, bd, inputs[bd.name], n)
      end
    end
    local gidcol = {}
    for i = 1, n do gidcol[i] = i - 1 end
    local op, ty, a, b, c, buf, imm = self.op, self.ty, self.a, self.b, self.c, self.buf, self.imm
    local LOAD, CONST, GID, REF, LET, STORE, BARRIER = OP.load, OP.const, OP.gid, OP.ref, OP.let, OP.store, OP.barrier
    local opname = OP_NAMES
    for _ = 1, fixpoint do
      local vals = {}
      for i = 1, self.nodes do
        local o = op[i]
        if o == LOAD then
          vals[i] = shifted(cols[buf[i]], imm[i], n)
        elseif o == CONST then
          vals[i] = imm[i]
        elseif o == GID then
          vals[i] = gidcol
        elseif o == REF then
          vals[i] = vals[imm[i]]
        elseif o == LET then
          vals[i] = vals[a[i]]
          vals[a[i]] = nil
        elseif o == STORE then
          local v = vals[a[i]]
          vals[a[i]] = nil
          cols[buf[i]] = type(v) == "table" and v or fill(n, v)
        elseif o ~= BARRIER then
          local x, y, z = vals[a[i]], vals[b[i]], c[i] ~= 0 and vals[c[i]] or nil
          local kinds = (type(x) == "table" and "c" or "s") .. (type(y) == "table" and "c" or "s")
            .. (z == nil and "" or (type(z) == "table" and "c" or "s"))
          vals[i] = kernel(ty[i], opname[o], kinds)(n, x, y, z)
          vals[a[i]], vals[b[i]] = nil, nil
          if c[i] ~= 0 then vals[c[i]] = nil end
        end
      end
    end
    local out = {}
    for bi, bd in ipairs(self.buffers) do
      if bd.role ~= "input" then
        out[bd.name] = table.move(cols[bi], 1, n, 1, {})
      end
    end
    return out
  end

  --- P.compare(prog, got, want [, tolerance]) -> true | false, message.
  --- Integer buffers must match exactly; f32 buffers within `tolerance`
  --- (relative, default 1e-5) with NaN equal to NaN.
  function M.compare(prog, got, want, tol)
    tol = tol or 1e-5
    for _, bd in ipairs(prog.buffers) do
      if bd.role ~= "input" then
        local g, w = got[bd.name], want[bd.name]
        if type(g) ~= "table" then
          return false, string.format("buffer '%s' was not read back", bd.name)
        end
        if #g ~= #w then
          return false, string.format("buffer '%s': %s read back, %s expected", bd.name,
            count(#g, "element"), count(#w))
        end
        local bad, first = 0, nil
        for i = 1, #w do
          local x, y = g[i], w[i]
          local ok
          if bd.type == "f32" then
            ok = (x == y) or (x ~= x and y ~= y)
              or (math.abs(x - y) <= tol * math.max(math.abs(x), math.abs(y)) + 1e-30)
          else
            ok = x == y
          end
          if not ok then
            bad = bad + 1
            first = first or i
          end
        end
        if bad > 0 then
          return false, string.format("buffer '%s': %s of %s differ; first at gid %d: got %s, expected %s",
            bd.name, count(bad), count(#w, "element"), first - 1, tostring(g[first]), tostring(w[first]))
        end
      end
    end
    return true
  end
end
