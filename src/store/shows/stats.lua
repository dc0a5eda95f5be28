-- An operator's view (`StatsReply` in shows/reply.rs): the queue's length, active buyers, the
-- rate in force and the configured one, tickets ever joined, the buyer cap, open, lost, the
-- arrival window (ms; absent: the default), admissions released untaken, the join challenge's
-- bits, the stock (0: none), the pace, and the settings as the operator set them (JSON text,
-- absent when none were), the schedule's event running (its place in the list, from 1), and presence: away, passed over, released, fans asking to be called.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted', 'window', 'released')
if m[4] or not m[1] then return {refused = 'no_such_show'} end
local now = now_ms()
local grace = away_rules(settings())
return {
  queue_length = redis.call('ZCARD', Q),
  active = active(now),
  rate = rate(),
  joined = tonumber(redis.call('GET', SEQ) or '0'),
  cap = cap(),
  open = m[2] == '1',
  lost = m[3] == '1',
  window_ms = tonumber(m[5] or ''),
  released = tonumber(m[6] or '0'),
  configured_rate = configured_rate(),
  challenge_bits = tonumber(redis.call('HGET', META, 'challenge_bits') or '0'),
  stock = stock(),
  pace = pace_reply(),
  settings = redis.call('HGET', META, 'settings') or nil,
  event = tonumber(string.match(redis.call('HGET', META, 'event') or '', '^(%d+)') or ''),
  -- Presence: fans with no live stream seen longer ago than the grace (queued or passed
  -- over), those passed over while away, and places released after the hold.
  away = redis.call('ZCOUNT', AWAY, '-inf', '(' .. (now - grace)),
  parked = redis.call('ZCARD', PARKED),
  expired = redis.call('HLEN', EXPIRED),
  calls_waiting = redis.call('HLEN', CALLS),
}
