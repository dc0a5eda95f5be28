-- Bypass: a fan let through without queueing, because a bypass rule of the show matched its
-- request (docs/bypass.md; the rule is matched before, by the caller). A.ticket: its new
-- ticket; A.via: the rule's kind (token, network, link), which the audit records (never who);
-- A.idem_key: the caller's Idempotency-Key, if any; A.link: a signed link's {id, iat_ms,
-- exp_ms}, when a link let it through; A.most: the most bypass admissions the show may have
-- running at once.
-- Admitted at once as a tick admits (an admission of this epoch for the TTL, under an arrival
-- number of its own, counted among the running admissions, so a cap's ticks make room for
-- it), only while the on-sale is open, and never past the stock: a bypass takes a seat as any
-- admission does. Its arrival never waited: it is kept in LEFT as a leave is, so nobody behind
-- counts it, and the hubs are told as of a leave.
-- The same Idempotency-Key answers the admission it made while that runs (a monitor that
-- checks every minute holds one seat, not one a check). A link goes through once, and only if
-- signed after the show last took links on (`links_from`, configure.lua).
-- Answers {outcome = 'admitted', arrival} or {outcome = 'replayed', ticket, arrival}, or
-- 'not_open', 'sold_out', 'too_many', 'link_void', 'link_used'.
local m = show_meta()
local epoch, refused = live_show(m)
if refused then return refused end
m = events_due(m, epoch)
if phase_of(m) ~= 1 then return {outcome = 'not_open'} end
local now = now_ms()
-- Under a field no join's key can name (a key is visible ASCII, never a space).
local idem = A.idem_key and ('bypass ' .. A.idem_key)
if idem then
  local kept = redis.call('HGET', IDEM, idem)
  if kept and admitted(kept, epoch) and redis.call('PTTL', ADMITTED .. kept) > 0 then
    return {outcome = 'replayed', ticket = kept, arrival = admitted_arrival(kept)}
  end
end
local free = seats_free(now)
if free and free <= 0 then return {outcome = 'sold_out'} end
redis.call('ZREMRANGEBYSCORE', BYPASSED, '-inf', now)
if redis.call('ZCARD', BYPASSED) >= A.most then return {outcome = 'too_many'} end
if A.link then
  -- Links are signed to the second; so is the time the show took links on.
  local from = tonumber(redis.call('HGET', META, 'links_from') or '0')
  if A.link.iat_ms < from - from % 1000 then
    return {outcome = 'link_void'}
  end
  -- Kept past the link's end by a margin: the server's clock judged the end, not Redis's.
  local ttl = math.max(A.link.exp_ms - now, 0) + 300000
  if not redis.call('SET', LINKS .. A.link.id, '1', 'NX', 'PX', ttl) then
    return {outcome = 'link_used'}
  end
end
local arrival = redis.call('INCR', SEQ)
redis.call('SET', ADMITTED .. A.ticket, epoch .. '|' .. string.format('%d', arrival), 'PX', TTL)
redis.call('ZADD', ADMISSIONS, now + TTL, A.ticket)
redis.call('ZADD', BYPASSED, now + TTL, A.ticket)
redis.call('PEXPIRE', BYPASSED, TTL)
admitted_now(1, now)
if idem then
  redis.call('HSET', IDEM, idem, A.ticket)
  redis.call('PEXPIRE', IDEM, 86400000)
end
local key = order_key(draw_phase(m), arrival) or arrival
redis.call('ZADD', LEFT, key, key)
audit({'kind', 'bypass', 'at_ms', now, 'epoch', epoch, 'arrival', arrival, 'via', A.via})
publish('leave', epoch, redis.call('INCR', VER), head(), key, 0, now)
return {outcome = 'admitted', arrival = arrival}
