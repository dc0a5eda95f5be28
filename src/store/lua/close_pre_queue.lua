-- Closes the pre-queue of a show whose opening time has come by Redis' clock: its size is
-- fixed (fans joining from now queue behind it) and hubs re-read the show. Fenced like an
-- admission (A.fence), and idempotent: asked again, it answers the same. Returns {-1} fenced,
-- {-3} not due yet (or lost), {-4} drawn already, {-5} not scheduled (any more: deleted, or
-- created anew), {n, 1} closed with n arrivals and waiting for the beacon's value, or {n, 0,
-- seed, beacon value}.
local m = redis.call('HMGET', META, 'epoch', 'lost', 'deleted', 'opens_at', 'closed_n',
  'draw_key', 'seed', 'beacon', 'beacon_value')
if not m[1] or m[3] or not m[4] then return {-5} end
if m[2] == '1' then return {-3} end
local token = tonumber(A.fence)
local fence = tonumber(redis.call('GET', FENCE) or '0')
if token < fence then return {-1} end
if token > fence then redis.call('SET', FENCE, token) end
if m[6] then return {-4} end
local n = tonumber(m[5] or '')
if not n then
  local now = now_ms()
  if tonumber(m[4]) > now then return {-3} end
  n = tonumber(redis.call('GET', SEQ) or '0')
  redis.call('HSET', META, 'closed_n', n)
  publish('draw', m[1], redis.call('INCR', VER), head(), nil, 0, now)
end
if m[8] and not m[9] then return {n, 1} end
return {n, 0, m[7], m[9] or ''}
