-- An operator's view: {queue length, active buyers, rate, tickets ever joined, buyer cap}.
local now = now_ms()
return {
  redis.call('ZCARD', Q),
  active(now),
  rate(),
  tonumber(redis.call('GET', SEQ) or '0'),
  cap(),
}
