-- Leave: a waiting ticket leaves the queue (everyone behind moves up, and the hubs are told);
-- an admitted ticket gives its admission back. ARGV[7] = ticket. Returns 1 if it was live.
local now = now_ms()
local seq = redis.call('ZSCORE', Q, ARGV[7])
if seq then
  seq = tonumber(seq)
  redis.call('ZREM', Q, ARGV[7])
  redis.call('ZADD', LEFT, seq, seq)
  local ver = redis.call('INCR', VER)
  publish('leave', ver, head(), seq, 0, now)
  return 1
end
if redis.call('DEL', ADMITTED .. ARGV[7]) == 1 then
  redis.call('ZREM', ADMISSIONS, ARGV[7])
  return 1
end
return 0
