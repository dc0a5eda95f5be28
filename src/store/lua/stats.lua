-- An operator's view: {queue length, admissions still valid, rate, tickets ever joined}.
local now = now_ms()
return {
  redis.call('ZCARD', Q),
  redis.call('ZCOUNT', ADMISSIONS, '(' .. now, '+inf'),
  rate(),
  tonumber(redis.call('GET', SEQ) or '0'),
}
