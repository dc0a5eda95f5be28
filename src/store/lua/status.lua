-- Where a ticket stands. The queue first: admission moves a ticket from the queue to
-- "admitted" in one step, so a ticket is always found in one of the two while it is live.
-- ARGV[7] = ticket. Returns {kind (0 unknown, 1 waiting, 2 admitted), position or pttl, seq,
-- rate, version, epoch}, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local e = tonumber(epoch)
local rank = redis.call('ZRANK', Q, ARGV[7])
if rank then
  return {1, rank + 1, tonumber(redis.call('ZSCORE', Q, ARGV[7])), rate(), version(), e}
end
if admitted(ARGV[7], epoch) then
  local pttl = redis.call('PTTL', ADMITTED .. ARGV[7])
  if pttl > 0 then return {2, pttl, 0, rate(), version(), e} end
end
return {0, 0, 0, rate(), version(), e}
