-- An order through the gate, in one step. A.hold = holdId, A.ticket = the admission presented
-- (absent: none; from the ticket id or from a verified pass, alike), A.fingerprint = the
-- request's (email|amount), A.order = the new order's id.
-- A hold belongs to its show: the same request again (same admission, email, amount) answers
-- its order; anything else is a conflict. An admission that bought is spent: it buys no
-- more and the ticket no longer answers as admitted. In every phase but closed (the gate lifted) the
-- ticket must be a running admission of this epoch that has not bought yet: before the
-- opening, while paused and once ended too. Buying spends it and frees its place for the next
-- fan. With a stock, no order goes past it, and the last seat sold ends the on-sale. Answers
-- the outcome `created` or `repeated` (with the `order` id), `conflict` (with `why`: hold,
-- sold out, admission) or `forbidden`.
local epoch, refused = live_show()
if refused then return refused end
local gated = phase() ~= 3
local ticket = ''
if gated and A.ticket then ticket = A.ticket end
local fingerprint = ticket .. '|' .. A.fingerprint
local held = redis.call('HGET', HOLDS, A.hold)
if held then
  local id, was = string.match(held, '^([^|]*)|(.*)$')
  if was == fingerprint then return {outcome = 'repeated', order = id} end
  return {outcome = 'conflict', why = 'hold'}
end
local st = stock()
if st > 0 and redis.call('HLEN', HOLDS) >= st then
  return {outcome = 'conflict', why = 'sold out'}
end
local now = now_ms()
-- The buyer's arrival number, for the public record (0: no admission, the gate lifted).
local arrival = 0
if gated then
  -- A pass names its admission; that admission must still run here too (not given back,
  -- released untaken or of another epoch), so a pass buys no more than its ticket id would.
  if ticket ~= '' and redis.call('HEXISTS', SPENT, ticket) == 1 then
    return {outcome = 'conflict', why = 'admission'}
  end
  if ticket == '' or not admitted(ticket, epoch) then return {outcome = 'forbidden'} end
  arrival = admitted_arrival(ticket)
  redis.call('HSET', SPENT, ticket, A.hold)
  ended(ticket, now)
  redis.call('ZREM', ADMISSIONS, ticket)
  -- Spent: the ticket is admitted no more, and is handed no pass again.
  redis.call('DEL', ADMITTED .. ticket)
  redis.call('ZREM', SEEN, ticket)
  publish_ended(epoch, ticket, now)
end
redis.call('HSET', HOLDS, A.hold, A.order .. '|' .. fingerprint)
audit({'kind', 'order', 'at_ms', now, 'epoch', epoch, 'arrival', arrival})
if st > 0 and redis.call('HLEN', HOLDS) >= st then enter_phase('ended', epoch, 'sold out') end
return {outcome = 'created', order = A.order}
