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
  if apply_events(now, epoch, token) then
    publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now)
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
-- However many are away, a tick looks at no more than this many fans past its places.
local budget = places + 1000
-- A drawn pre-queue goes first, in drawn order: place hd + 1 holds the arrival the
-- permutation put there (skipped if it left).
local d = draw_phase()
if d and d.p then
  while n < places and hd < d.closed and budget > 0 do
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
while n < places and budget > 0 and (not d or not d.p or hd >= d.closed) do
  local popped = redis.call('ZPOPMIN', Q, math.min(places - n, budget))
  if #popped == 0 then break end
  for i = 1, #popped, 2 do
    reached(popped[i], popped[i + 1])
    hd = tonumber(popped[i + 1])
  end
  budget = budget - #popped / 2
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
away_figures(now, grace, hold)
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
  local within = hd + math.ceil(math.max(n_rate, 1) * ahead)
  for _, t in ipairs(redis.call('ZRANGEBYSCORE', CALLQ, '-inf', within, 'LIMIT', 0, 1000)) do
    redis.call('ZREM', CALLQ, t)
    local seq = redis.call('ZSCORE', Q, t)
    local pk = not seq and redis.call('ZSCORE', PARKED, t)
    local where = (seq and standing(t, tonumber(seq))) or (pk and parked_standing(tonumber(pk)))
    if where and where.position then
      calls[#calls + 1] = {ticket = t, event = 'soon', position = where.position,
        eta_s = math.ceil(where.position / math.max(n_rate, 1)),
        channel = redis.call('HGET', CALLS, t)}
    end
  end
end
-- Every tick is published, one that admitted nobody too: the pace moved, so did the ETAs.
local ver = redis.call('INCR', VER)
publish('tick', epoch, ver, hd, nil, n, now, (#released > 0) and released or nil)
local reply = {outcome = 'admitted', count = n, head = hd, version = ver}
if #calls > 0 then
  reply.calls = calls
  reply.notify_url = st_set.notifyUrl
  reply.push_services = st_set.pushServices
end
return reply
