-- An order through the gate, in one step. ARGV[7] = holdId, ARGV[8] = ticket or '',
-- ARGV[9] = the request's fingerprint (email|amount), ARGV[10] = the new order's id.
-- A hold belongs to its show: the same request again (same admission, email, amount) answers
-- its order; anything else is a conflict. While the on-sale is open the ticket must be a
-- running admission of this epoch that has not bought yet; buying spends it and frees its
-- place for the next fan. Returns {'created', id}, {'repeated', id}, {'conflict', why},
-- {'forbidden'}, or {'-404'}/{'-503'}.
local epoch, refused = live_show()
if refused then return {tostring(refused[1])} end
local open = redis.call('HGET', META, 'open') == '1'
local ticket = ''
if open then ticket = ARGV[8] end
local fingerprint = ticket .. '|' .. ARGV[9]
local held = redis.call('HGET', HOLDS, ARGV[7])
if held then
  local id, was = string.match(held, '^([^|]*)|(.*)$')
  if was == fingerprint then return {'repeated', id} end
  return {'conflict', 'hold'}
end
if open then
  if ticket == '' or not admitted(ticket, epoch) then return {'forbidden'} end
  if redis.call('HSETNX', SPENT, ticket, ARGV[7]) == 0 then return {'conflict', 'admission'} end
  redis.call('ZREM', ADMISSIONS, ticket)
end
redis.call('HSET', HOLDS, ARGV[7], ARGV[10] .. '|' .. fingerprint)
return {'created', ARGV[10]}
