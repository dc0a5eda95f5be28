-- Bypass: a fan let through without queueing, because a bypass rule of the show matched its
-- request (docs/bypass.md; the rule is matched before, by the caller). A.ticket: its new
-- ticket; A.via: the rule's kind (token, network, link), which the audit records (never who).
-- Admitted at once as a tick admits (an admission of this epoch for the TTL, under an arrival
-- number of its own, counted among the running admissions, so a cap's ticks make room for
-- it), only while the on-sale is open, and never past the stock: a bypass takes a seat as any
-- admission does, so none is let through while every seat is sold or held. Its arrival never
-- waited: it is kept in LEFT as a leave is, so nobody behind counts it, and the hubs are told
-- as of a leave. Answers {outcome = 'admitted', arrival, expires_in_ms}, or 'not_open' or
-- 'sold_out'.
local m = show_meta()
local epoch, refused = live_show(m)
if refused then return refused end
if phase_of(m) ~= 1 then return {outcome = 'not_open'} end
local now = now_ms()
local st = tonumber(m.stock or '0')
if st > 0 and st - redis.call('HLEN', HOLDS) - active(now) <= 0 then
  return {outcome = 'sold_out'}
end
local arrival = redis.call('INCR', SEQ)
redis.call('SET', ADMITTED .. A.ticket, epoch .. '|' .. string.format('%d', arrival), 'PX', TTL)
redis.call('ZADD', ADMISSIONS, now + TTL, A.ticket)
admitted_now(1, now)
local key = order_key(draw_phase(m), arrival) or arrival
redis.call('ZADD', LEFT, key, key)
audit({'kind', 'bypass', 'at_ms', now, 'epoch', epoch, 'arrival', arrival, 'via', A.via})
publish('leave', epoch, redis.call('INCR', VER), head(), key, 0, now)
return {outcome = 'admitted', arrival = arrival, expires_in_ms = TTL}
