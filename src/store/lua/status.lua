-- Where a ticket stands. The queue first: admission moves a ticket from the queue to
-- "admitted" in one step, so a ticket is always found in one of the two while it is live.
-- ARGV[7] = ticket. Returns {kind (0 unknown, 1 waiting, 2 admitted), position or pttl, seq, rate, version}.
local rank = redis.call('ZRANK', Q, ARGV[7])
if rank then
  return {1, rank + 1, tonumber(redis.call('ZSCORE', Q, ARGV[7])), rate(), version()}
end
local pttl = redis.call('PTTL', ADMITTED .. ARGV[7])
if pttl > 0 then
  return {2, pttl, 0, rate(), version()}
end
return {0, 0, 0, rate(), version()}
