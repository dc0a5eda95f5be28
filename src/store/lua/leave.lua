-- Leave: a waiting ticket leaves the queue (everyone behind moves up, and the hubs are told);
-- an admitted ticket gives its admission back. ARGV[7] = ticket. Returns {1} if it was live,
-- {0} if not, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local now = now_ms()
local seq = redis.call('ZSCORE', Q, ARGV[7])
if seq then
  seq = tonumber(seq)
  redis.call('ZREM', Q, ARGV[7])
  redis.call('ZADD', LEFT, seq, seq)
  local ver = redis.call('INCR', VER)
  publish('leave', epoch, ver, head(), seq, 0, now)
  return {1}
end
if admitted(ARGV[7], epoch) then
  redis.call('DEL', ADMITTED .. ARGV[7])
  redis.call('ZREM', ADMISSIONS, ARGV[7])
  return {1}
end
return {0}
