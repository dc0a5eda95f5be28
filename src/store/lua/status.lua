-- Where a ticket stands. The queue first: admission moves a ticket from the queue to
-- "admitted" in one step, so a ticket is always found in one of the two while it is live.
-- A poll of an admitted ticket is a sign of life: the fan is there to buy (see admit.lua's
-- arrival window). A.ticket: the ticket. Answers {ticket (its `state`: waiting at a
-- position, pre_queue with ms until opening, admitted with ms until its admission runs out,
-- lost, unknown), version, epoch, pace}. `lost`: neither waiting nor admitted, and marked in
-- LOSTFANS by an instance that mended the show after a failover lost writes (lineage.rs), so
-- its fan is told why, in this one read.
local epoch, refused = live_show()
if refused then return refused end
local function answer(ticket)
  return {ticket = ticket, version = version(), epoch = epoch, pace = pace_reply()}
end
local seq = redis.call('ZSCORE', Q, A.ticket)
if seq then return answer(standing(A.ticket, tonumber(seq))) end
if admitted(A.ticket, epoch) then
  local pttl = redis.call('PTTL', ADMITTED .. A.ticket)
  if pttl > 0 then
    redis.call('ZADD', SEEN, now_ms(), A.ticket)
    return answer({state = 'admitted', expires_in_ms = pttl})
  end
end
if redis.call('SISMEMBER', LOSTFANS, A.ticket) == 1 then return answer({state = 'lost'}) end
return answer({state = 'unknown'})
