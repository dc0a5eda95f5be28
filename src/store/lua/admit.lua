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

-- An announced rate change takes effect at the first tick from its time.
local change = redis.call('HMGET', META, 'change_at', 'change_rate')
if change[1] and tonumber(change[1]) <= now then
  redis.call('SET', RATE, change[2])
  redis.call('HDEL', META, 'change_at', 'change_rate')
end

local ran_out = redis.call('ZRANGEBYSCORE', ADMISSIONS, '-inf', now, 'WITHSCORES')
for i = 2, #ran_out, 2 do
  local expired = tonumber(ran_out[i])
  held(expired - TTL, expired)
end
redis.call('ZREMRANGEBYSCORE', ADMISSIONS, '-inf', now)
redis.call('ZREMRANGEBYSCORE', SEEN, '-inf', now - TTL)
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
local st = stock()
if st > 0 then
  places = math.min(places, math.max(st - redis.call('HLEN', HOLDS) - active(now), 0))
end

redis.call('HSET', FLOW, 'full', (max_active > 0 and places == 0) and '1' or '0')

local hd = head()
local head_before = hd
local n = 0
-- The arrival numbers admitted, for the audit.
local arrivals = {}
local function let_in(ticket, arrival)
  redis.call('SET', ADMITTED .. ticket, epoch .. '|' .. string.format('%d', tonumber(arrival)),
    'PX', TTL)
  redis.call('ZADD', ADMISSIONS, now + TTL, ticket)
  n = n + 1
end
-- A drawn pre-queue goes first, in drawn order: place hd + 1 holds the arrival the
-- permutation put there (skipped if it left).
local d = draw_phase()
if d and d.p then
  while n < places and hd < d.closed do
    hd = hd + 1
    local a = drawn_arrival(d.p, hd)
    local t = redis.call('ZRANGEBYSCORE', Q, a, a)[1]
    if t then
      redis.call('ZREM', Q, t)
      let_in(t, a)
      arrivals[#arrivals + 1] = a
    end
  end
end
if n < places then
  local popped = redis.call('ZPOPMIN', Q, places - n)
  for i = 1, #popped, 2 do
    let_in(popped[i], popped[i + 1])
    hd = tonumber(popped[i + 1])
    arrivals[#arrivals + 1] = hd
  end
end
if hd ~= head_before then
  redis.call('SET', HEAD, hd)
  -- Early leavers at or below the new head no longer shift anyone's position.
  redis.call('ZREMRANGEBYSCORE', LEFT, '-inf', hd)
end
if n > 0 then
  admitted_now(n, now)
  audit({'kind', 'tick', 'at_ms', now, 'fence', token, 'epoch', epoch, 'rate', n_rate,
    'admitted', ranges(arrivals)})
end
-- Every tick is published, one that admitted nobody too: the pace moved, so did the ETAs.
local ver = redis.call('INCR', VER)
publish('tick', epoch, ver, hd, nil, n, now, (#released > 0) and released or nil)
return {outcome = 'admitted', count = n, head = hd, version = ver}
