-- Join: the joins of one show gathered into one call (group commit, `redis/gather.rs`; a join
-- that finds no call for its show out goes alone). A.joins: one entry a join, {ticket,
-- idem_key, proof_key, proof_ttl_ms, proof_bits}, the last four when given. The sequence
-- numbers of the joins that go in are taken in one step (INCRBY) and enqueued in one ZADD, so
-- they stay dense and each is handed out once; the show's meta is read once (`show_meta`), and
-- the pace and version once for every join of the call.
-- Each join has its own outcome, in A.joins' order (`joins`), and one join's refusal never
-- touches the others':
--   joined and waiting: its position alone, a number (the call's new tickets take the
--   arrivals from `first` on, in order), the most common answer kept the cheapest to write;
--   joined into a pre-queue not drawn yet: 0, and the reply's `opens_in_ms` says when it
--   opens (alike for every new ticket of the call);
--   `joined` (a pre-queue drawn, never expected for a new ticket), with where it stands;
--   `replayed`, with the ticket kept under its idem_key (the client's Idempotency-Key, a
--   field of the show's hash IDEM) and where it stands, while that ticket lives in this epoch
--   (waiting, or admitted: a replay of an admitted ticket is a sign of life, as a poll is) or
--   was joined earlier in this same call; no proof is spent then, and an ended on-sale still
--   answers it;
--   `ended` once the on-sale ended;
--   a proof refused (below).
-- IDEM keeps each key's ticket: the call reads its keys in one HMGET and writes its new tickets
-- in one HSET, and the hash lives a day after the last keyed join (so each key at least a day,
-- as a key of its own with a TTL did). The hash goes with the show's state (`state_keys`), and
-- a ticket it names counts only while it waits in this epoch's queue or holds an admission of
-- this epoch (`kept`), so a ticket of an earlier incarnation is never answered: the value needs
-- no epoch of its own (`epoch|ticket` cost a concatenation a join, some 6 % of a keyed join).
-- The call answers {joins, epoch, and, when some join was answered a ticket, version and pace,
-- `first` when some joined, and `opens_in_ms` when they joined a pre-queue not drawn yet}; a
-- show that is not live is refused for every join at once
-- ({refused = …}).
-- Proof of work: the show's difficulty (meta `challenge_bits`) against the join's proof_bits,
-- the zero bits the caller found in SHA-256(challenge:nonce) after checking the challenge's
-- signature, show and expiry; the challenge is spent here (proof_key, kept while it could
-- still be used, proof_ttl_ms), so a valid proof costs no extra call and a reused one is
-- refused atomically. The outcome `proof_required` (none brought) or `proof_too_weak`, each
-- with the `bits` needed, or `proof_spent` (used before, this call included).
-- Access codes (docs/lanes.md): a join may bring `code` (the code's hash, as CODES keeps it:
-- `lane|uses left`) and `fallback` (it would rather wait in the general queue than be refused).
-- A code known, with a use left, for a lane the settings in force list, joins that lane: a use
-- is spent, the lane's next arrival taken (its own sequence, `seq:<slot>` of LANES), and the
-- audit records the code's hash (its first 16 hex digits) and the lane; the outcome `laned`,
-- with where the ticket stands. Otherwise `code_refused` with why (`unknown`, `used_up`,
-- `lane_closed`), unless the join asked to fall back and the show is not `codesOnly`; a join
-- with no code of a `codesOnly` show is `code_required`. A code is judged once the join's
-- proof (if the show asks one) is spent, so each try of a code costs a proof.
local m = show_meta()
local epoch, refused = live_show(m)
if refused then return refused end
-- A schedule's change no tick applied yet (the show is not open): in force for this join.
m = events_due(m, epoch)
local ended = phase_of(m) == 4
local need = tonumber(m.challenge_bits or '0')
-- maxQueueLength (the show's settings): the room left in the queue, nil when unbounded. A
-- join past it waits outside, told to come back (a replay is not refused: it holds a place).
local st = settings(m)
local most = tonumber(st.maxQueueLength or 0)
local room = most > 0 and most - redis.call('ZCARD', Q) or nil
local joins = A.joins
local out, fresh, new, arrival = {}, {}, {}, {}
-- Joins into a lane: their lane's name, by join.
local laned = {}
-- The lane the code hashed `code` lets its fan into, and the uses it has left; else nil and
-- why not.
local function code_lane(code)
  local v = redis.call('HGET', CODES, code)
  if not v then return nil, 'unknown' end
  local lane, uses = string.match(v, '^([^|]+)|(%d+)$')
  if not lane or tonumber(uses) < 1 then return nil, 'used_up' end
  for _, l in ipairs(st.lanes or {}) do
    if l.name == lane then return lane, tonumber(uses) end
  end
  return nil, 'lane_closed'
end
local answered = false
local JOINED = {}

-- What IDEM keeps under the call's keys, read at once: join i's is stored[keyed[i]] (false:
-- nothing). A key twice in the call is read twice: cheaper than finding out.
local keys, keyed, stored = {}, {}, {}
for i, j in ipairs(joins) do
  if j.idem_key then
    keys[#keys + 1] = j.idem_key
    keyed[i] = #keys
  end
end
if #keys > 0 then stored = redis.call('HMGET', IDEM, unpack(keys)) end

-- Where the ticket kept under an idempotency key stands, while it lives in this epoch: in the
-- queue (which a new epoch starts empty), or admitted under this epoch.
local function kept(t)
  local seq = redis.call('ZSCORE', Q, t)
  if seq then return t, standing(t, tonumber(seq), m) end
  if admitted(t, epoch) then
    local pttl = redis.call('PTTL', ADMITTED .. t)
    if pttl > 0 then
      redis.call('ZADD', SEEN, now_ms(), t)
      return t, {state = 'admitted', expires_in_ms = pttl}
    end
  end
  return nil
end

for i, j in ipairs(joins) do
  local o
  if j.idem_key then
    if fresh[j.idem_key] then
      -- Joined under the same key earlier in this call: its ticket, once it stands.
      o = {outcome = 'replayed', mate = fresh[j.idem_key]}
    else
      local value = stored[keyed[i]]
      if value then
        local t, st = kept(value)
        if t then o = {outcome = 'replayed', ticket_id = t, ticket = st} end
      end
    end
  end
  -- A code is judged last, once the proof is spent: a proof buys one try of a code, and
  -- nothing tells a code apart before it.
  local lane, uses
  if not o then
    if ended then
      o = {outcome = 'ended'}
    elseif st.codesOnly and not j.code then
      o = {outcome = 'code_required'}
    elseif room and room <= 0 then
      o = unavailable('the queue is full; try again in a few seconds', 10000)
    elseif need > 0 and not j.proof_key then
      o = {outcome = 'proof_required', bits = need}
    elseif need > 0 and j.proof_bits < need then
      o = {outcome = 'proof_too_weak', bits = need}
    elseif need > 0 and not redis.call('SET', j.proof_key, '1', 'NX', 'PX', j.proof_ttl_ms) then
      o = {outcome = 'proof_spent'}
    elseif j.code then
      lane, uses = code_lane(j.code)
      if not lane and (st.codesOnly or not j.fallback) then
        o = {outcome = 'code_refused', why = uses}
      end
    end
  end
  if not o then
    if lane then
      local k = lane_slot(lane, st)
      if not k then
        o = unavailable('every lane is taken by fans still waiting; try again later', 10000)
      else
        redis.call('HSET', CODES, j.code, lane .. '|' .. (uses - 1))
        redis.call('HINCRBY', CODESTAT, 'uses:' .. lane, -1)
        local a = k * LANE + redis.call('HINCRBY', LANES, 'seq:' .. k, 1)
        redis.call('ZADD', Q, a, j.ticket)
        redis.call('ZADD', AWAY, now_ms(), j.ticket)
        if j.idem_key then
          redis.call('HSET', IDEM, j.idem_key, j.ticket)
          redis.call('PEXPIRE', IDEM, 86400000)
          fresh[j.idem_key] = i
        end
        if room then room = room - 1 end
        audit({'kind', 'code', 'at_ms', now_ms(), 'epoch', epoch, 'code', string.sub(j.code, 1, 16),
          'lane', lane, 'arrival', a})
        arrival[i] = a
        laned[i] = true
        o = {outcome = 'laned', ticket = standing(j.ticket, a, m)}
      end
    else
      o = JOINED
      if room then room = room - 1 end
      new[#new + 1] = i
      if j.idem_key then fresh[j.idem_key] = i end
    end
  end
  if o == JOINED or o.outcome == 'replayed' or o.outcome == 'laned' then answered = true end
  out[i] = o
end

-- A lane may have taken its slot in this call: the pace tells of it.
if next(laned) then m.lane_slots = redis.call('HGET', META, 'lane_slots') end
local n = #new
local first, opens_in
if n > 0 then
  first = redis.call('INCRBY', SEQ, n) - n + 1
  local z = {}
  for k, i in ipairs(new) do
    arrival[i] = first + k - 1
    z[2 * k - 1] = arrival[i]
    z[2 * k] = joins[i].ticket
  end
  redis.call('ZADD', Q, unpack(z))
  -- A fan is present as it joins: its away clock starts now, unless a stream or a poll
  -- follows (presence, prelude.lua).
  local seen, now = {}, now_ms()
  for k, i in ipairs(new) do
    seen[2 * k - 1] = now
    seen[2 * k] = joins[i].ticket
  end
  redis.call('ZADD', AWAY, unpack(seen))
  local h = {}
  for _, i in ipairs(new) do
    local key = joins[i].idem_key
    if key then
      h[#h + 1] = key
      h[#h + 1] = joins[i].ticket
    end
  end
  if #h > 0 then
    redis.call('HSET', IDEM, unpack(h))
    redis.call('PEXPIRE', IDEM, 86400000)
  end
  -- Where the new tickets stand: in a pre-queue not drawn yet, all alike, so the time until
  -- the opening is worked out once and told once (the reply's `opens_in_ms`; each new
  -- ticket's entry is then 0); else each at its rank + 1. They took the highest arrivals, so
  -- they hold consecutive ranks at the tail of the queue: two ZRANKs (the first's and the
  -- last's) confirm it and give every position; otherwise (never expected) each is ranked on
  -- its own.
  local d = draw_phase(m)
  if not order_key(d, first) then
    opens_in = d.closed and 0 or math.max(d.opens_at - now_ms(), 0)
    for _, i in ipairs(new) do out[i] = 0 end
  elseif d and d.p and first <= d.closed then
    for _, i in ipairs(new) do
      out[i] = {outcome = 'joined', ticket = standing(joins[i].ticket, arrival[i], m)}
    end
  else
    -- Parked fans (passed over while away) stand ahead of every queued one.
    local parked = parked_count()
    local r1 = redis.call('ZRANK', Q, joins[new[1]].ticket)
    local rn = n > 1 and redis.call('ZRANK', Q, joins[new[n]].ticket) or r1
    for k, i in ipairs(new) do
      local rank = r1 + k - 1
      if rn - r1 ~= n - 1 then rank = redis.call('ZRANK', Q, joins[i].ticket) end
      out[i] = rank + 1 + parked
    end
  end
end
for i, o in ipairs(out) do
  if type(o) == 'table' and o.mate then
    local mate = out[o.mate]
    local t
    if laned[o.mate] then
      t = mate.ticket
    elseif opens_in then
      t = {state = 'pre_queue', arrival = arrival[o.mate], opens_in_ms = opens_in}
    elseif type(mate) == 'number' then
      t = {state = 'waiting', arrival = arrival[o.mate], position = mate}
    else
      t = mate.ticket
    end
    out[i] = {outcome = 'replayed', ticket_id = joins[o.mate].ticket, ticket = t}
  end
end

local reply = {joins = out, epoch = epoch, first = first, opens_in_ms = opens_in}
if answered then reply.pace, reply.version = pace_reply(m) end
return reply
