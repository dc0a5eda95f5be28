-- An order through the gate, in one step. A.hold = holdId, A.ticket = the admission presented
-- (absent: none; from the ticket id or from a verified pass, alike), A.fingerprint = the
-- request's (email|amount), A.order = the new order's id.
-- A hold belongs to its show: the same request again (same admission, email, amount) answers
-- its order; anything else is a conflict. While the on-sale is open the ticket must be a
-- running admission of this epoch that has not bought yet; buying spends it and frees its
-- place for the next fan. Returns {'created', id}, {'repeated', id}, {'conflict', why},
-- {'forbidden'}, or {'-404'}/{'-503'}.
local epoch, refused = live_show()
if refused then return {tostring(refused[1])} end
local open = redis.call('HGET', META, 'open') == '1'
local ticket = ''
if open and A.ticket then ticket = A.ticket end
local fingerprint = ticket .. '|' .. A.fingerprint
local held = redis.call('HGET', HOLDS, A.hold)
if held then
  local id, was = string.match(held, '^([^|]*)|(.*)$')
  if was == fingerprint then return {'repeated', id} end
  return {'conflict', 'hold'}
end
if open then
  -- A pass names its admission; that admission must still run here too (not given back,
  -- released untaken or of another epoch), so a pass buys no more than its ticket id would.
  if ticket == '' or not admitted(ticket, epoch) then return {'forbidden'} end
  if redis.call('HSETNX', SPENT, ticket, A.hold) == 0 then return {'conflict', 'admission'} end
  ended(ticket, now_ms())
  redis.call('ZREM', ADMISSIONS, ticket)
end
redis.call('HSET', HOLDS, A.hold, A.order .. '|' .. fingerprint)
return {'created', A.order}
