-- Join: the next arrival sequence and the enqueue in one step, so sequences stay dense.
-- A.ticket: the ticket. With A.idem_key (the client's Idempotency-Key, as a key of this
-- show): refused with {-409} while the ticket kept under it lives in this epoch (the caller
-- answers that one), else the new ticket is kept under it for a day. Returns {seq, kind
-- (1 waiting, 3 in a pre-queue), position or ms until opening, version, epoch, pace...}, or
-- {-404}/{-503}/{-409}.
local epoch, refused = live_show()
if refused then return refused end
if A.idem_key then
  local kept = redis.call('GET', A.idem_key)
  if kept then
    local e, t = string.match(kept, '^(%d+)|(.*)$')
    if e == epoch and (redis.call('ZSCORE', Q, t) or admitted(t, epoch)) then return {-409} end
  end
  redis.call('SET', A.idem_key, epoch .. '|' .. A.ticket, 'PX', 86400000)
end
local seq = redis.call('INCR', SEQ)
redis.call('ZADD', Q, seq, A.ticket)
local st = standing(A.ticket, seq)
return with_pace({seq, st[1], st[2], version(), tonumber(epoch)})
