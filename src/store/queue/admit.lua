-- One admission tick for one show: ZPOPMIN the rate's worth and mark each admitted with a
-- TTL, as one step, so a polling fan sees its ticket queued or admitted, never neither.
--
-- Two guards make "N per second" hold whatever the admitters do:
-- * the fencing token (A.fence) must be at least the newest this show has seen, so a paused
--   or partitioned old leader is refused once a newer one has served the show;
-- * at most one tick per show per second of Redis' own clock, so even two leaders racing
--   across a lease hand-over cannot admit twice in one second.
-- A show that is closed, deleted or lost is not served: a queue that restarted from nothing
-- is never admitted from.
-- Admitted is not bought: with a cap on active buyers, a tick admits only the free places
-- (cap − admitted who have neither bought nor run out), never more than the rate.
-- Answers the outcome `fenced` (with the newest fence seen), `already_this_second` (with
-- `next_in_ms`), `not_served`, or `admitted`: how many, the new head and version (a tick
-- that admitted nobody is published too, with the pace it measured).
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted')
if not m[1] or m[2] ~= '1' or m[3] == '1' or m[4] then return {outcome = 'not_served'} end
local epoch = m[1]
local token = tonumber(A.fence)
local fence = tonumber(redis.call('GET', FENCE) or '0')
if token < fence then return {outcome = 'fenced', fence = fence} end
local now = now_ms()
if token > fence then redis.call('SET', FENCE, token) end
local second = math.floor(now / 1000)
local last = tonumber(redis.call('GET', TICK) or '-1')
if second <= last then 
  return {outcome = 'already_this_second', next_in_ms = (second + 1) * 1000 - now}
end
redis.call('SET', TICK, second)

-- An announced rate change takes effect at the first tick from its time: the show's own rate
-- from then on (kept in its settings too, so that a schedule's events lay themselves over it).
-- The schedule's next change (`apply_events`) too.
local change = redis.call('HMGET', META, 'change_at', 'change_rate', 'event_at')
local changed = change[1] and tonumber(change[1]) <= now
if changed then
  redis.call('SET', RATE, change[2])
  redis.call('HDEL', META, 'change_at', 'change_rate')
  local own = cjson.decode(redis.call('HGET', META, 'settings') or '{}')
  own.admitPerSecond, own.rateChangeAt, own.rateChangeTo = tonumber(change[2]), nil, nil
  redis.call('HSET', META, 'settings', settings_text(own))
end
if (change[3] and tonumber(change[3]) <= now)
  or (changed and redis.call('HEXISTS', META, 'events') == 1) then
  if apply_events(now, epoch, token, true) then
    publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now)
    -- The event paused or ended the on-sale: nobody is admitted.
    if not is_open() then return {outcome = 'not_served'} end
  end
end

local ran_out = redis.call('ZRANGEBYSCORE', ADMISSIONS, '-inf', now, 'WITHSCORES')
for i = 2, #ran_out, 2 do
  local expired = tonumber(ran_out[i])
  held(expired - TTL, expired)
end
redis.call('ZREMRANGEBYSCORE', ADMISSIONS, '-inf', now)
redis.call('ZREMRANGEBYSCORE', SEEN, '-inf', now - TTL)
-- Presence (prelude.lua): instances that stopped reporting leave their fans last seen
-- then; with a hold, fans away longer than it lose their places (the queued ones leave, and
-- the hubs are told as of any leave).
reap_instances(now)
local st_set = settings()
local grace, hold = away_rules(st_set)
local expired = {}
if hold > 0 then
  local gone = redis.call('ZRANGEBYSCORE', AWAY, '-inf', now - grace - hold, 'LIMIT', 0, 1000)
  local hold_s = math.floor(hold / 1000)
  for _, t in ipairs(gone) do
    redis.call('ZREM', AWAY, t)
    local a = redis.call('ZSCORE', PARKED, t)
    local q = not a and redis.call('ZSCORE', Q, t)
    if a or q then
      redis.call('HSET', EXPIRED, t, hold_s)
      uncall(t)
      expired[#expired + 1] = tonumber(a or q)
    end
    if a then
      redis.call('ZREM', PARKED, t)
      redis.call('ZREM', BACK, t)
    elseif q then
      redis.call('ZREM', Q, t)
      local key = order_key(draw_phase(), tonumber(q)) or tonumber(q)
      redis.call('ZADD', LEFT, key, key)
      publish('leave', epoch, redis.call('INCR', VER), head(), key, 0, now)
    end
  end
end
local n_rate = rate()
local places = n_rate
local max_active = cap()
-- Admissions released untaken by this tick: every hub stops letting their passes through.
local released = {}
if max_active > 0 then
  -- An admission nobody takes up (no poll, no live stream, no order within the arrival
  -- window, A.window_ms unless the show has its own) goes to the next fan.
  local window = tonumber(redis.call('HGET', META, 'window') or A.window_ms)
  if window > 0 and window < TTL then
    local since = now - window
    for _, t in ipairs(redis.call('ZRANGEBYSCORE', ADMISSIONS, '(' .. now, now + TTL - window)) do
      local seen = tonumber(redis.call('ZSCORE', SEEN, t) or '0')
      if seen < since then
        ended(t, now)
        redis.call('ZREM', ADMISSIONS, t)
        redis.call('ZREM', SEEN, t)
        redis.call('DEL', ADMITTED .. t)
        redis.call('HINCRBY', META, 'released', 1)
        released[#released + 1] = t
      end
    end
  end
  places = math.min(places, math.max(max_active - active(now), 0))
end
-- Admitted is not bought, but never more admitted than seats: with a stock, the places are
-- the seats neither ordered nor held by an admission still running.
local free = seats_free(now)
if free then places = math.min(places, free) end

redis.call('HSET', FLOW, 'full', (max_active > 0 and places == 0) and '1' or '0')

local hd = head()
local head_before = hd
local n = 0
-- The arrival numbers admitted, passed over while away and let in once back, for the audit.
local arrivals, passed, returned = {}, {}, {}
-- The tickets let in, for their calls.
local let = {}
local function let_in(ticket, arrival)
  let[#let + 1] = ticket
  redis.call('SET', ADMITTED .. ticket, epoch .. '|' .. string.format('%d', tonumber(arrival)),
    'PX', TTL)
  redis.call('ZADD', ADMISSIONS, now + TTL, ticket)
  n = n + 1
  arrivals[#arrivals + 1] = tonumber(arrival)
end
-- Parked fans who came back go first: their places come before every queued one.
if hold > 0 and n < places then
  local b = redis.call('ZRANGE', BACK, 0, places - 1, 'WITHSCORES')
  for i = 1, #b, 2 do
    local t = b[i]
    redis.call('ZREM', BACK, t)
    if n < places and present(t, now, grace) and redis.call('ZREM', PARKED, t) == 1 then
      let_in(t, b[i + 1])
      returned[#returned + 1] = tonumber(b[i + 1])
    end
  end
end
-- A queued fan whose turn came: let in if present; else passed over, keeping its place.
local function reached(ticket, arrival)
  if hold > 0 and not present(ticket, now, grace) then
    redis.call('ZADD', PARKED, arrival, ticket)
    passed[#passed + 1] = tonumber(arrival)
  else
    let_in(ticket, arrival)
  end
end
-- However many are away, a tick looks at no more than this many fans past its places (over
-- every lane together).
local budget = places + 1000
-- A show with lanes (docs/lanes.md) splits the places among them; each lane is taken from
-- in its own arrival order.
local lanes = served_lanes(st_set)
local d = draw_phase()
-- The general queue (lane 0): up to `want` more let in, a drawn pre-queue first, in drawn
-- order (place hd + 1 holds the arrival the permutation put there, skipped if it left).
local function take_general(want)
  local goal = n + want
  if d and d.p then
    while n < goal and hd < d.closed and budget > 0 do
      hd = hd + 1
      local a = drawn_arrival(d.p, hd)
      local t = redis.call('ZRANGEBYSCORE', Q, a, a)[1]
      if t then
        redis.call('ZREM', Q, t)
        reached(t, a)
        budget = budget - 1
      end
    end
  end
  while n < goal and budget > 0 and (not d or not d.p or hd >= d.closed) do
    local popped
    if lanes then
      popped = redis.call('ZRANGEBYSCORE', Q, '-inf', LANE - 1, 'WITHSCORES', 'LIMIT', 0,
        math.min(goal - n, budget))
      for i = 1, #popped, 2 do redis.call('ZREM', Q, popped[i]) end
    else
      popped = redis.call('ZPOPMIN', Q, math.min(goal - n, budget))
    end
    if #popped == 0 then break end
    for i = 1, #popped, 2 do
      reached(popped[i], popped[i + 1])
      hd = tonumber(popped[i + 1])
    end
    budget = budget - #popped / 2
  end
end
-- Lane `k` (from 1): up to `want` more let in, in its arrival order.
local lane_heads = {}
local function take_lane(k, want)
  local goal = n + want
  local lo, hi = lane_range(k)
  local hk = lane_heads[k] or lane_head(k)
  while n < goal and budget > 0 do
    local got = redis.call('ZRANGEBYSCORE', Q, lo, hi, 'WITHSCORES', 'LIMIT', 0,
      math.min(goal - n, budget))
    if #got == 0 then break end
    for i = 1, #got, 2 do
      redis.call('ZREM', Q, got[i])
      reached(got[i], got[i + 1])
      hk = tonumber(got[i + 1])
    end
    budget = budget - #got / 2
  end
  lane_heads[k] = hk
end
-- For the audit: each lane's fans queued, let in and reached (let in or passed over), and the
-- places the lanes shared.
local lane_record, shared_places = nil, places - n
if not lanes then
  take_general(places - n)
else
  local w0, got, saw = {}, {}, {}
  for _, l in ipairs(lanes) do got[l.slot], saw[l.slot] = 0, 0 end
  -- A lane whose fans were away takes fewer than its part: a second look gives what is left
  -- to the others.
  for look = 1, 3 do
    local free_places = places - n
    if free_places <= 0 then break end
    local w, any = {}, false
    for _, l in ipairs(lanes) do
      w[l.slot] = lane_queued(l.slot)
      if look == 1 then w0[l.slot] = w[l.slot] end
      any = any or w[l.slot] > 0
    end
    if not any then break end
    local q = lane_quotas(free_places, lanes, w, second)
    for _, l in ipairs(lanes) do
      if q[l.slot] > 0 then
        local n0, p0 = n, #passed
        if l.slot == 0 then take_general(q[l.slot]) else take_lane(l.slot, q[l.slot]) end
        got[l.slot] = got[l.slot] + n - n0
        saw[l.slot] = saw[l.slot] + (n - n0) + (#passed - p0)
      end
    end
  end
  lane_record = {}
  for _, l in ipairs(lanes) do
    lane_record[#lane_record + 1] = table.concat({l.slot, l.priority and 'p' or l.share,
      w0[l.slot] or 0, got[l.slot], saw[l.slot]}, ':')
  end
  for k, hk in pairs(lane_heads) do
    redis.call('HSET', LANES, 'head:' .. k, hk)
    redis.call('ZREMRANGEBYSCORE', LEFT, k * LANE, hk)
  end
end
if hd ~= head_before then
  redis.call('SET', HEAD, hd)
  -- Early leavers at or below the new head no longer shift anyone's position.
  redis.call('ZREMRANGEBYSCORE', LEFT, '-inf', hd)
end
if n > 0 then admitted_now(n, now) end
-- The fans let in hold no place any more: AWAY keeps place holders only (one call a tick).
for i = 1, #let, 1000 do
  redis.call('ZREM', AWAY, unpack(let, i, math.min(i + 999, #let)))
end
local away = away_figures(now, grace, hold)
if n > 0 or #passed > 0 or #expired > 0 then
  local record = {'kind', 'tick', 'at_ms', now, 'fence', token, 'epoch', epoch, 'rate', n_rate,
    'admitted', ranges(arrivals)}
  -- Presence, by arrival number: passed over while away, let in once back, released.
  if #passed > 0 then
    record[#record + 1] = 'passed'
    record[#record + 1] = ranges(passed)
  end
  if #returned > 0 then
    table.sort(returned)
    record[#record + 1] = 'returned'
    record[#record + 1] = ranges(returned)
  end
  if #expired > 0 then
    table.sort(expired)
    record[#record + 1] = 'expired'
    record[#record + 1] = ranges(expired)
  end
  -- Lanes: the places they shared, and each lane's `slot:share:queued:let in:reached`
  -- (share `p` for priority), in the order served.
  if lane_record then
    record[#record + 1] = 'places'
    record[#record + 1] = shared_places
    record[#record + 1] = 'lanes'
    record[#record + 1] = table.concat(lane_record, ',')
  end
  audit(record)
end
-- The "your turn" calls due (notify.lua): `admitted` to the fans let in, `soon` to those now
-- within notifyAheadSeconds of the head; each at most once, and the admitter sends them
-- after the tick (never in its way).
local calls = {}
if redis.call('HLEN', CALLS) > 0 then
  for _, t in ipairs(let) do
    local c = redis.call('HGET', CALLS, t)
    if c then
      calls[#calls + 1] = {ticket = t, event = 'admitted', position = 0, channel = c}
      uncall(t)
    end
  end
  local ahead = tonumber(st_set.notifyAheadSeconds or 120)
  local rate_now = math.max(n_rate, 1)
  -- Each queue's reach: from its head, as many places as it is let in within `ahead`. The
  -- general queue at the whole rate; with lanes, each lane (its arrivals from slot * LANE)
  -- at its share of the rate, or all of it with priority.
  local reaches = {{lo = '-inf', head = hd, per = rate_now}}
  if lanes then
    reaches = {}
    for _, l in ipairs(lanes) do
      reaches[#reaches + 1] = {
        lo = l.slot == 0 and '-inf' or l.slot * LANE,
        head = l.slot == 0 and hd or (lane_heads[l.slot] or lane_head(l.slot)),
        per = rate_now * (l.priority and 1 or l.share / 100),
      }
    end
  end
  for _, r in ipairs(reaches) do
    local within = r.head + math.ceil(r.per * ahead)
    for _, t in ipairs(redis.call('ZRANGEBYSCORE', CALLQ, r.lo, within, 'LIMIT', 0, 1000)) do
      redis.call('ZREM', CALLQ, t)
      local seq = redis.call('ZSCORE', Q, t)
      local pk = not seq and redis.call('ZSCORE', PARKED, t)
      local where = (seq and standing(t, tonumber(seq))) or (pk and parked_standing(tonumber(pk)))
      if where and where.position then
        calls[#calls + 1] = {ticket = t, event = 'soon', position = where.position,
          eta_s = math.ceil(where.position / r.per), channel = redis.call('HGET', CALLS, t)}
      end
    end
  end
end
-- Every tick is published, one that admitted nobody too: the pace moved, so did the ETAs.
local ver = redis.call('INCR', VER)
local e = publish('tick', epoch, ver, hd, nil, n, now, (#released > 0) and released or nil)
-- The report's sample of the tick: at most one a second, as ticks are.
local laned = 0
for _, l in ipairs(lanes or {}) do
  if l.slot > 0 then laned = laned + tonumber(redis.call('HGET', LANES, 'seq:' .. l.slot) or '0') end
end
sample(now, epoch, e, n, laned, away)
local reply = {outcome = 'admitted', count = n, head = hd, version = ver}
if #calls > 0 then
  reply.calls = calls
  reply.notify_url = st_set.notifyUrl
  reply.push_services = st_set.pushServices
end
return reply
