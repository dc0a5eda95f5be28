-- An operator's view: {queue length, active buyers, rate, tickets ever joined, buyer cap,
-- open, lost, arrival window ms (-1: the default), admissions released untaken, configured
-- rate, join challenge bits, stock (0: none), pace...}, or {-404}.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted', 'window', 'released')
if m[4] or not m[1] then return {-404} end
local now = now_ms()
return with_pace({
  redis.call('ZCARD', Q),
  active(now),
  rate(),
  tonumber(redis.call('GET', SEQ) or '0'),
  cap(),
  m[2] == '1' and 1 or 0,
  m[3] == '1' and 1 or 0,
  tonumber(m[5] or '-1'),
  tonumber(m[6] or '0'),
  configured_rate(),
  tonumber(redis.call('HGET', META, 'challenge_bits') or '0'),
  stock(),
})
