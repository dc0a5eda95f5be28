-- An admission spent by a checkout outside (`POST …/redeem`), in one step: A.ticket is the
-- admission presented (its id, or the ticket of a verified pass). Like an order through the
-- gate it spends the admission once, in any phase: it must be a running admission of this
-- epoch, never spent (by an order or a redemption). Spent, the ticket answers as admitted no
-- more, is handed no pass again, and its place goes to the next fan. A redemption is not a
-- seat sold: the stock counts orders. Answers the outcome `redeemed` (with the buyer's
-- `arrival` and the `epoch`), `spent` or `forbidden`.
local epoch, refused = live_show()
if refused then return refused end
if redis.call('HEXISTS', SPENT, A.ticket) == 1 then return {outcome = 'spent'} end
if not admitted(A.ticket, epoch) then return {outcome = 'forbidden'} end
local now = now_ms()
local arrival = admitted_arrival(A.ticket)
redis.call('HSET', SPENT, A.ticket, 'redeemed')
ended(A.ticket, now)
redis.call('ZREM', ADMISSIONS, A.ticket)
redis.call('DEL', ADMITTED .. A.ticket)
redis.call('ZREM', SEEN, A.ticket)
audit({'kind', 'redeem', 'at_ms', now, 'epoch', epoch, 'arrival', arrival})
publish_ended(epoch, A.ticket, now)
return {outcome = 'redeemed', arrival = arrival, epoch = epoch}
