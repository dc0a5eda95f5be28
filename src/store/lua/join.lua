-- Join: the next arrival sequence and the enqueue in one step, so sequences stay dense.
-- A.ticket: the ticket. Returns {seq, position, version, epoch, pace...}, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local seq = redis.call('INCR', SEQ)
redis.call('ZADD', Q, seq, A.ticket)
return with_pace({seq, redis.call('ZRANK', Q, A.ticket) + 1, version(), tonumber(epoch)})
