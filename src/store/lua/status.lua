-- Where a ticket stands. The queue first: admission moves a ticket from the queue to
-- "admitted" in one step, so a ticket is always found in one of the two while it is live.
-- A poll of an admitted ticket is a sign of life: the fan is there to buy (see admit.lua's
-- arrival window). ARGV[7] = ticket. Returns {kind (0 unknown, 1 waiting, 2 admitted),
-- position or pttl, seq, version, epoch, pace...}, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local e = tonumber(epoch)
local rank = redis.call('ZRANK', Q, ARGV[7])
if rank then
  return with_pace({1, rank + 1, tonumber(redis.call('ZSCORE', Q, ARGV[7])), version(), e})
end
if admitted(ARGV[7], epoch) then
  local pttl = redis.call('PTTL', ADMITTED .. ARGV[7])
  if pttl > 0 then
    redis.call('ZADD', SEEN, now_ms(), ARGV[7])
    return with_pace({2, pttl, 0, version(), e})
  end
end
return with_pace({0, 0, 0, version(), e})
