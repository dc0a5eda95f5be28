-- Where tickets stand (a parked ticket, passed over while away, waits ahead of the queue; a
-- place released after the away hold is `expired`, with the hold in seconds): A.tickets, the status reads of one show gathered into one call (group
-- commit, `redis/gather.rs`; a read that finds no call for its show out goes alone), so the
-- show's meta, version and pace are read once for all of them. Each ticket is looked for in
-- the queue first: admission moves a ticket from the queue to "admitted" in one step, so a
-- ticket is always found in one of the two while it is live. A read of an admitted ticket is
-- a sign of life: the fan is there to buy (see admit.lua's arrival window). Answers {tickets
-- (each one's `state`, in A.tickets' order: waiting at a position, pre_queue with ms until
-- opening, admitted with ms until its admission runs out, lost, unknown), version, epoch,
-- pace}. `lost`: neither waiting nor admitted, and marked in LOSTFANS by an instance that
-- mended the show after a failover lost writes (lineage.rs), so its fan is told why, in this
-- one read.
local m = show_meta()
local epoch, refused = live_show(m)
if refused then return refused end
m = events_due(m, epoch)
local out, seen, now = {}, {}, nil
for i, t in ipairs(A.tickets) do
  local seq = redis.call('ZSCORE', Q, t)
  local parked = not seq and redis.call('ZSCORE', PARKED, t)
  if seq then
    out[i] = standing(t, tonumber(seq), m)
  elseif parked then
    out[i] = parked_standing(tonumber(parked))
  else
    local pttl = admitted(t, epoch) and redis.call('PTTL', ADMITTED .. t) or 0
    if pttl > 0 then
      now = now or now_ms()
      seen[#seen + 1] = now
      seen[#seen + 1] = t
      out[i] = {state = 'admitted', expires_in_ms = pttl}
    elseif redis.call('SISMEMBER', LOSTFANS, t) == 1 then
      out[i] = {state = 'lost'}
    else
      local hold = redis.call('HGET', EXPIRED, t)
      if hold then
        out[i] = {state = 'expired', away_hold_s = tonumber(hold)}
      else
        out[i] = {state = 'unknown'}
      end
    end
  end
end
if #seen > 0 then redis.call('ZADD', SEEN, unpack(seen)) end
local pace, ver = pace_reply(m)
return {tickets = out, version = ver, epoch = epoch, pace = pace}
