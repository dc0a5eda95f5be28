-- Where a ticket stands. The queue first: admission moves a ticket from the queue to
-- "admitted" in one step, so a ticket is always found in one of the two while it is live.
-- A poll of an admitted ticket is a sign of life: the fan is there to buy (see admit.lua's
-- arrival window). A.ticket: the ticket. Returns {kind (0 unknown, 1 waiting, 2 admitted, 3
-- in a pre-queue), position or pttl or ms until opening, seq, version, epoch, pace...}, or
-- {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
local e = tonumber(epoch)
local seq = redis.call('ZSCORE', Q, A.ticket)
if seq then
  seq = tonumber(seq)
  local st = standing(A.ticket, seq)
  return with_pace({st[1], st[2], seq, version(), e})
end
if admitted(A.ticket, epoch) then
  local pttl = redis.call('PTTL', ADMITTED .. A.ticket)
  if pttl > 0 then
    redis.call('ZADD', SEEN, now_ms(), A.ticket)
    return with_pace({2, pttl, 0, version(), e})
  end
end
return with_pace({0, 0, 0, version(), e})
