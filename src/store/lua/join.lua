-- Join: the next arrival sequence and the enqueue in one step, so sequences stay dense.
-- ARGV[7] = ticket. Returns {seq, position, version, epoch, pace...}, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local seq = redis.call('INCR', SEQ)
redis.call('ZADD', Q, seq, ARGV[7])
return with_pace({seq, redis.call('ZRANK', Q, ARGV[7]) + 1, version(), tonumber(epoch)})
