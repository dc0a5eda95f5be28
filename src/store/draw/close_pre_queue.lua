-- Closes the pre-queue of a show whose opening time has come by Redis' clock: its size is
-- fixed (fans joining from now queue behind it) and hubs re-read the show. Fenced like an
-- admission (A.fence), and idempotent: asked again, it answers the same. Answers the outcome
-- `fenced`, `not_due` (not yet, or lost), `drawn` (already), `not_scheduled` (any more:
-- deleted, or created anew), `awaiting_beacon` (closed with `participants` arrivals, the
-- beacon's value still to come), or `ready` (with `participants`, `seed`, `beacon_value`).
local m = redis.call('HMGET', META, 'epoch', 'lost', 'deleted', 'opens_at', 'closed_n',
  'draw_key', 'seed', 'beacon', 'beacon_value')
if not m[1] or m[3] or not m[4] then return {outcome = 'not_scheduled'} end
if m[2] == '1' then return {outcome = 'not_due'} end
local token = tonumber(A.fence)
local fence = tonumber(redis.call('GET', FENCE) or '0')
if token < fence then return {outcome = 'fenced'} end
if token > fence then redis.call('SET', FENCE, token) end
if m[6] then return {outcome = 'drawn'} end
local n = tonumber(m[5] or '')
if not n then
  local now = now_ms()
  if tonumber(m[4]) > now then return {outcome = 'not_due'} end
  n = tonumber(redis.call('GET', SEQ) or '0')
  redis.call('HSET', META, 'closed_n', n)
  publish('draw', m[1], redis.call('INCR', VER), head(), nil, 0, now)
end
if m[8] and not m[9] then return {outcome = 'awaiting_beacon', participants = n} end
return {outcome = 'ready', participants = n, seed = m[7], beacon_value = m[9] or ''}
